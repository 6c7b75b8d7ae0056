// `bmoe run`'s output constraints, named as llama.cpp names them: --grammar / --grammar-file (GBNF)
// and -j, --json-schema / --json-schema-file. A file that cannot be read or a schema that is not
// JSON is a one-line usage error naming the flag's value; whether llama.cpp can turn the schema
// into a grammar is checked by the engine before loading anything else.
import { InvalidArgumentError, type Command } from 'commander';
import { readFileArgument } from './file-argument.js';
import { cliOption } from './model-options.js';

export interface ConstraintFlags {
  grammar?: string;
  grammarFile?: string;
  jsonSchema?: Record<string, unknown> | boolean;
  jsonSchemaFile?: Record<string, unknown> | boolean;
}

const readText = (path: string): string => readFileArgument(path).toString('utf8');

function parseSchema(text: string, where: string): Record<string, unknown> | boolean {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch (err) {
    throw new InvalidArgumentError(`${where} is not JSON: ${err instanceof Error ? err.message : String(err)}`);
  }
  if (typeof v !== 'boolean' && (v === null || typeof v !== 'object' || Array.isArray(v))) {
    throw new InvalidArgumentError(`${where} must be a JSON schema (an object or true/false)`);
  }
  return v as Record<string, unknown> | boolean;
}

export function addConstraintOptions(cmd: Command): Command {
  return cmd
    .addOption(cliOption('--grammar <gbnf>', 'constrain the output with a GBNF grammar (llama.cpp grammar syntax)', 'none'))
    .addOption(cliOption('--grammar-file <file>', 'the GBNF grammar from a file', 'none', readText).conflicts('grammar'))
    .addOption(
      cliOption('-j, --json-schema <schema>', 'constrain the output to JSON matching this JSON schema', 'none', (v) => parseSchema(v, 'the schema')).conflicts([
        'grammar',
        'grammarFile',
      ]),
    )
    .addOption(
      cliOption('--json-schema-file <file>', 'the JSON schema from a file', 'none', (v) => parseSchema(readText(v), v)).conflicts([
        'grammar',
        'grammarFile',
        'jsonSchema',
      ]),
    );
}

/** The engine options the constraint flags set. */
export function constraintOptions(flags: ConstraintFlags): { grammar?: string; jsonSchema?: Record<string, unknown> | boolean } {
  const grammar = flags.grammar ?? flags.grammarFile;
  const jsonSchema = flags.jsonSchema ?? flags.jsonSchemaFile;
  return { ...(grammar !== undefined ? { grammar } : {}), ...(jsonSchema !== undefined ? { jsonSchema } : {}) };
}
