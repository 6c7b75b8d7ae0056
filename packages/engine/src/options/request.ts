// The generate options that are not rows of the option table (they have no flag and no single
// native key): stop strings, grammar, JSON schema, tools. Their zod schemas, with messages in
// the table's style ("must be ..."), for ../options.ts.
import { z } from 'zod';

const str = (error: string) => z.string({ error });

const tool = z.object(
  {
    type: z.literal('function', { error: "must be 'function'" }),
    function: z.object(
      {
        name: str('must be a string').min(1, { error: 'must be a non-empty string' }),
        description: str('must be a string').optional(),
        parameters: z.record(z.string(), z.unknown(), { error: 'must be an object (a JSON schema)' }).optional(),
      },
      { error: 'must be { name, description?, parameters? }' },
    ),
  },
  { error: "must be { type: 'function', function: { name, description?, parameters? } }" },
);

const toolChoice = z.union(
  [
    z.enum(['auto', 'none', 'required']),
    z.object({ type: z.literal('function'), function: z.object({ name: z.string().min(1) }) }),
  ],
  { error: "must be 'auto', 'none', 'required' or { type: 'function', function: { name } }" },
);

/** Schemas of the options GenerateRequestOptions names, by key. */
export const requestSchemas = {
  stop: z.union([z.string(), z.array(z.string())], { error: 'must be a string or an array of strings' }).optional(),
  grammar: str('must be a string (GBNF)').optional(),
  jsonSchema: z.union([z.boolean(), z.record(z.string(), z.unknown())], { error: 'must be a JSON schema (an object or a boolean)' }).optional(),
  tools: z.array(tool, { error: 'must be an array of tools' }).optional(),
  toolChoice: toolChoice.optional(),
  parallelToolCalls: z.boolean({ error: 'must be true or false' }).optional(),
} satisfies Record<string, z.ZodType>;
