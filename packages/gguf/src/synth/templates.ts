// Chat templates (tokenizer.chat_template) for the synthetic models, written for this package.
//
// Each one renders the family's real conversation format, so llama.cpp's common/chat.cpp picks
// the same handler it would for the real model:
// - qwen3moe: ChatML with <think> reasoning. No specialised handler matches it, so chat.cpp's
//   differential autoparser analyses it; `enable_thinking = false` makes the generation prompt
//   end with an empty <think></think> block, which the autoparser reads as the reasoning tags.
// - gpt-oss: harmony framing; chat.cpp routes any template containing "<|channel|>" to its
//   gpt-oss handler. Harmony has no on/off switch for reasoning, so `enable_thinking = false`
//   writes an empty analysis message and opens the final channel: the answer is parsed as
//   content from <|channel|>final<|message|> on.
// - gemma4: <|turn>role … <turn|> turns; chat.cpp detects the family by the literal
//   '<|tool_call>call:' and skips its legacy-template workarounds when the template carries the
//   "{#- OpenAI Chat Completions:" note on tool messages. Thinking is switched on by <|think|> at
//   the top of the system turn; without it the generation prompt closes an empty thought
//   channel, as chat.cpp's gemma4 parser expects.
// - qwen35moe: Qwen3.5's ChatML with <think> reasoning (on unless enable_thinking is false) and
//   XML tool calls (<tool_call><function=…><parameter=…>); chat.cpp routes a template with
//   "<tool_call>", "<function=" and "<parameter=" to its Qwen3-Coder / Qwen3.5 handler.
// - deepseek4: DeepSeek V4's <｜User｜> / <｜Assistant｜> turns, thinking closed by </think>, and
//   DSML tool calls; chat.cpp's DeepSeek V3.2/V4 handler is picked by "dsml_token" and "DSML" in
//   the template, V4's by "tool_calls" without "function_calls".
// The templates are kept whitespace-tight ({%- -%}) so their output is exactly the format.

// Pieces several templates share, spliced in as ${…} where the formats do the same thing.

/** ChatML: sys.text = the first message's content when it is a system message. */
const CHATML_SYSTEM = String.raw`{%- set sys = namespace(text='') -%}
{%- if messages and messages[0].role == 'system' -%}{%- set sys.text = messages[0].content -%}{%- endif -%}`;

/** turn.last_user = the index of the last user message (reasoning is replayed only after it). */
const LAST_USER_TURN = String.raw`{%- set turn = namespace(last_user=-1) -%}
{%- for m in messages -%}{%- if m.role == 'user' -%}{%- set turn.last_user = loop.index0 -%}{%- endif -%}{%- endfor -%}`;

/**
 * ChatML's message loop up to an assistant turn's reasoning: user messages (and system messages
 * after the first) as they are; for an assistant message, body.text is its content and
 * body.thought its reasoning_content, or else what the content holds between <think> and
 * </think> (each template then strips that from body.text its own way and renders the turn).
 */
const CHATML_TURNS_OPEN = String.raw`{%- for m in messages -%}
{%- if m.role == 'user' or (m.role == 'system' and not loop.first) -%}
{{- '<|im_start|>' + m.role + '\n' + m.content + '<|im_end|>\n' -}}
{%- elif m.role == 'assistant' -%}
{%- set body = namespace(text=(m.content if m.content is string else ''), thought='') -%}
{%- if m.reasoning_content is string -%}
{%- set body.thought = m.reasoning_content -%}
{%- elif '</think>' in body.text -%}
{%- set body.thought = body.text.split('</think>')[0].split('<think>')[-1] -%}`;

/**
 * ChatML's message loop from the end of an assistant turn: <|im_end|>, then tool results, each
 * run of them in one user turn of <tool_response> blocks.
 */
const CHATML_TURNS_CLOSE = String.raw`{{- '<|im_end|>\n' -}}
{%- elif m.role == 'tool' -%}
{%- if loop.first or messages[loop.index0 - 1].role != 'tool' -%}{{- '<|im_start|>user' -}}{%- endif -%}
{{- '\n<tool_response>\n' + m.content + '\n</tool_response>' -}}
{%- if loop.last or messages[loop.index0 + 1].role != 'tool' -%}{{- '<|im_end|>\n' -}}{%- endif -%}
{%- endif -%}
{%- endfor -%}`;

export const QWEN3_TEMPLATE = String.raw`{#- ChatML conversation with optional <think> reasoning (bmoe synthetic qwen3moe). -#}
${CHATML_SYSTEM}
{%- if tools -%}
{{- '<|im_start|>system\n' -}}
{%- if sys.text -%}{{- sys.text + '\n\n' -}}{%- endif -%}
{{- '# Tools\n\nThese functions are available, described inside <tools></tools>:\n<tools>' -}}
{%- for tool in tools -%}{{- '\n' + (tool | tojson) -}}{%- endfor -%}
{{- '\n</tools>\n\nTo call one, answer with a JSON object naming it and its arguments inside <tool_call></tool_call> tags:\n<tool_call>\n{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call><|im_end|>\n' -}}
{%- elif sys.text -%}
{{- '<|im_start|>system\n' + sys.text + '<|im_end|>\n' -}}
{%- endif -%}
{#- Reasoning is replayed only for assistant turns after the last user turn. -#}
${LAST_USER_TURN}
${CHATML_TURNS_OPEN}
{%- set body.text = body.text.split('</think>')[-1] -%}
{%- endif -%}
{{- '<|im_start|>assistant\n' -}}
{%- if loop.index0 > turn.last_user and (loop.last or body.thought) -%}
{{- '<think>\n' + body.thought.strip('\n') + '\n</think>\n\n' -}}
{%- endif -%}
{{- body.text.lstrip('\n') -}}
{%- if m.tool_calls -%}
{%- for call in m.tool_calls -%}
{%- set f = call.function if call.function is defined else call -%}
{%- if body.text or not loop.first -%}{{- '\n' -}}{%- endif -%}
{{- '<tool_call>\n{"name": "' + f.name + '", "arguments": ' -}}
{%- if f.arguments is string -%}{{- f.arguments -}}{%- else -%}{{- f.arguments | tojson -}}{%- endif -%}
{{- '}\n</tool_call>' -}}
{%- endfor -%}
{%- endif -%}
${CHATML_TURNS_CLOSE}
{%- if add_generation_prompt -%}
{{- '<|im_start|>assistant\n' -}}
{%- if enable_thinking is defined and enable_thinking is false -%}{{- '<think>\n\n</think>\n\n' -}}{%- endif -%}
{%- endif -%}`;

export const HARMONY_TEMPLATE = String.raw`{#- Harmony-format conversation (bmoe synthetic gpt-oss). -#}
{%- set effort = reasoning_effort if reasoning_effort is defined and reasoning_effort else 'medium' -%}
{{- '<|start|>system<|message|>You are a helpful assistant.\nReasoning: ' + effort + '\n\n# Valid channels: analysis, commentary, final. Channel must be included for every message.' -}}
{%- if tools -%}{{- '\nCalls to these tools must go to the commentary channel: ' + "'functions'." -}}{%- endif -%}
{{- '<|end|>' -}}
{%- set skip = namespace(first=0) -%}
{%- set has_sys = messages and messages[0].role in ['system', 'developer'] -%}
{%- if has_sys or tools -%}
{{- '<|start|>developer<|message|>' -}}
{%- if has_sys -%}{{- '# Instructions\n\n' + messages[0].content -}}{%- set skip.first = 1 -%}{%- endif -%}
{%- if tools -%}
{{- '\n\n# Tools\n\n## functions\n\nnamespace functions {\n' -}}
{%- for tool in tools -%}
{%- set f = tool.function if tool.function is defined else tool -%}
{{- '\n// ' + (f.description if f.description is string else '') + '\ntype ' + f.name + ' = (_: ' + (f.parameters | tojson) + ') => any;\n' -}}
{%- endfor -%}
{{- '\n} // namespace functions' -}}
{%- endif -%}
{{- '<|end|>' -}}
{%- endif -%}
${LAST_USER_TURN}
{%- for m in messages -%}
{%- if loop.index0 < skip.first -%}
{%- elif m.role == 'user' -%}
{{- '<|start|>user<|message|>' + m.content + '<|end|>' -}}
{%- elif m.role == 'system' or m.role == 'developer' -%}
{{- '<|start|>developer<|message|>' + m.content + '<|end|>' -}}
{%- elif m.role == 'assistant' -%}
{%- set thought = m.thinking if m.thinking is string else (m.reasoning_content if m.reasoning_content is string else '') -%}
{%- if thought and loop.index0 > turn.last_user -%}
{{- '<|start|>assistant<|channel|>analysis<|message|>' + thought + '<|end|>' -}}
{%- endif -%}
{%- if m.tool_calls -%}
{%- for call in m.tool_calls -%}
{%- set f = call.function if call.function is defined else call -%}
{{- '<|start|>assistant to=functions.' + f.name + '<|channel|>commentary json<|message|>' -}}
{%- if f.arguments is string -%}{{- f.arguments -}}{%- else -%}{{- f.arguments | tojson -}}{%- endif -%}
{{- '<|call|>' -}}
{%- endfor -%}
{%- else -%}
{{- '<|start|>assistant<|channel|>final<|message|>' + (m.content if m.content is string else '') -}}
{%- if loop.last -%}{{- '<|return|>' -}}{%- else -%}{{- '<|end|>' -}}{%- endif -%}
{%- endif -%}
{%- elif m.role == 'tool' -%}
{{- '<|start|>functions.' + (m.name if m.name is string else 'tool') + ' to=assistant<|channel|>commentary<|message|>' + m.content + '<|end|>' -}}
{%- endif -%}
{%- endfor -%}
{%- if add_generation_prompt -%}
{{- '<|start|>assistant' -}}
{%- if enable_thinking is defined and enable_thinking is false -%}{{- '<|channel|>analysis<|message|><|end|><|start|>assistant<|channel|>final<|message|>' -}}{%- endif -%}
{%- endif -%}`;

export const GEMMA4_TEMPLATE = String.raw`{#- Gemma 4 style turns (bmoe synthetic gemma4). Tool calls render as '<|tool_call>call:' + name + {args} + '<tool_call|>'. -#}
{#- OpenAI Chat Completions: tool results come as role "tool" messages right after the model turn that called them. -#}
{%- macro render_value(v) -%}
{%- if v is string -%}{{- '<|"|>' + v + '<|"|>' -}}
{%- elif v is boolean -%}{{- 'true' if v else 'false' -}}
{%- elif v is mapping -%}{{- '{' -}}{%- for k, x in v | dictsort -%}{{- k + ':' -}}{{- render_value(x) -}}{%- if not loop.last -%}{{- ',' -}}{%- endif -%}{%- endfor -%}{{- '}' -}}
{%- elif v is sequence -%}{{- '[' -}}{%- for x in v -%}{{- render_value(x) -}}{%- if not loop.last -%}{{- ',' -}}{%- endif -%}{%- endfor -%}{{- ']' -}}
{%- else -%}{{- v | string -}}{%- endif -%}
{%- endmacro -%}
{{- bos_token -}}
{%- set skip = namespace(first=0) -%}
{%- set thinking = enable_thinking is defined and enable_thinking -%}
{%- set has_sys = messages and messages[0].role in ['system', 'developer'] -%}
{%- if thinking or tools or has_sys -%}
{{- '<|turn>system\n' -}}
{%- if thinking -%}{{- '<|think|>\n' -}}{%- endif -%}
{%- if has_sys -%}{{- messages[0].content | trim -}}{%- set skip.first = 1 -%}{%- endif -%}
{%- if tools -%}
{%- for tool in tools -%}
{%- set f = tool.function if tool.function is defined else tool -%}
{{- '<|tool>declaration:' + f.name + '{description:<|"|>' + (f.description if f.description is string else '') + '<|"|>,parameters:' + (f.parameters | tojson) + '}<tool|>' -}}
{%- endfor -%}
{%- endif -%}
{{- '<turn|>\n' -}}
{%- endif -%}
{%- for m in messages -%}
{%- if loop.index0 < skip.first -%}
{%- elif m.role == 'tool' -%}
{{- '<|tool_response>response:' + (m.name if m.name is string else 'tool') + '{value:' -}}{{- render_value(m.content) -}}{{- '}<tool_response|>' -}}
{%- if loop.last or messages[loop.index0 + 1].role != 'tool' -%}{{- '<turn|>\n' -}}{%- endif -%}
{%- else -%}
{%- set role = 'model' if m.role == 'assistant' else m.role -%}
{{- '<|turn>' + role + '\n' -}}
{%- if m.tool_calls -%}
{%- for call in m.tool_calls -%}
{%- set f = call.function if call.function is defined else call -%}
{{- '<|tool_call>call:' + f.name -}}
{%- if f.arguments is string -%}{{- f.arguments -}}{%- else -%}{{- render_value(f.arguments) -}}{%- endif -%}
{{- '<tool_call|>' -}}
{%- endfor -%}
{%- endif -%}
{%- set body = namespace(text=(m.content if m.content is string else '')) -%}
{%- if role == 'model' and '<channel|>' in body.text -%}{%- set body.text = body.text.split('<channel|>')[-1] -%}{%- endif -%}
{{- body.text | trim -}}
{%- if not (m.tool_calls and not loop.last and messages[loop.index0 + 1].role == 'tool') -%}{{- '<turn|>\n' -}}{%- endif -%}
{%- endif -%}
{%- endfor -%}
{%- if add_generation_prompt -%}
{{- '<|turn>model\n' -}}
{%- if not thinking -%}{{- '<|channel>thought\n<channel|>' -}}{%- endif -%}
{%- endif -%}`;


export const QWEN35_TEMPLATE = String.raw`{#- Qwen3.5-style ChatML with <think> reasoning and XML tool calls (bmoe synthetic qwen35moe). -#}
${CHATML_SYSTEM}
{%- if tools -%}
{{- '<|im_start|>system\n# Tools\n\nYou have access to the following functions:\n\n<tools>' -}}
{%- for tool in tools -%}{{- '\n' + (tool | tojson) -}}{%- endfor -%}
{{- '\n</tools>\n\nTo call a function, reply in this format and nothing after it:\n\n<tool_call>\n<function=example_function_name>\n<parameter=example_parameter>\nvalue\n</parameter>\n</function>\n</tool_call>' -}}
{%- if sys.text -%}{{- '\n\n' + sys.text -}}{%- endif -%}
{{- '<|im_end|>\n' -}}
{%- elif sys.text -%}
{{- '<|im_start|>system\n' + sys.text + '<|im_end|>\n' -}}
{%- endif -%}
${LAST_USER_TURN}
${CHATML_TURNS_OPEN}
{%- set body.text = body.text.split('</think>')[-1].lstrip('\n') -%}
{%- endif -%}
{{- '<|im_start|>assistant\n' -}}
{%- if loop.index0 > turn.last_user -%}{{- '<think>\n' + body.thought.strip('\n') + '\n</think>\n\n' -}}{%- endif -%}
{{- body.text -}}
{%- if m.tool_calls -%}
{%- for call in m.tool_calls -%}
{%- set f = call.function if call.function is defined else call -%}
{%- if body.text.strip() or not loop.first -%}{{- '\n\n' if loop.first else '\n' -}}{%- endif -%}
{{- '<tool_call>\n<function=' + f.name + '>\n' -}}
{%- if f.arguments is mapping -%}
{%- for name, value in f.arguments | items -%}
{{- '<parameter=' + name + '>\n' + (value | tojson if value is mapping or (value is sequence and value is not string) else value | string) + '\n</parameter>\n' -}}
{%- endfor -%}
{%- endif -%}
{{- '</function>\n</tool_call>' -}}
{%- endfor -%}
{%- endif -%}
${CHATML_TURNS_CLOSE}
{%- if add_generation_prompt -%}
{{- '<|im_start|>assistant\n' -}}
{%- if enable_thinking is defined and enable_thinking is false -%}{{- '<think>\n\n</think>\n\n' -}}{%- else -%}{{- '<think>\n' -}}{%- endif -%}
{%- endif -%}`;

export const DEEPSEEK4_TEMPLATE = String.raw`{#- DeepSeek V4 style turns with DSML tool calls (bmoe synthetic deepseek4). -#}
{%- set dsml_token = '｜DSML｜' -%}
{%- set thinking = enable_thinking is defined and enable_thinking -%}
{%- set ns = namespace(sys='') -%}
{%- for m in messages -%}{%- if m.role == 'system' -%}{%- set ns.sys = ns.sys + ('\n\n' if ns.sys else '') + m.content -%}{%- endif -%}{%- endfor -%}
{%- if tools -%}
{%- set ns.sys = ns.sys + ('\n\n' if ns.sys else '') + '## Tools\n\nCall tools with a block like this:\n\n<' + dsml_token + 'tool_calls>\n<' + dsml_token + 'invoke name="$TOOL_NAME">\n<' + dsml_token + 'parameter name="$PARAMETER_NAME" string="true|false">$PARAMETER_VALUE</' + dsml_token + 'parameter>\n</' + dsml_token + 'invoke>\n</' + dsml_token + 'tool_calls>\n\nString values go as they are with string="true", anything else as JSON with string="false".\n\n### Available Tool Schemas\n\n' -%}
{%- for tool in tools -%}{%- set ns.sys = ns.sys + ((tool.function if tool.function is defined else tool) | tojson) + '\n' -%}{%- endfor -%}
{%- endif -%}
{{- bos_token + ns.sys -}}
{%- set last = namespace(user=-1) -%}
{%- for m in messages -%}{%- if m.role in ['user', 'developer', 'tool'] -%}{%- set last.user = loop.index0 -%}{%- endif -%}{%- endfor -%}
{%- set state = namespace(in_user=false) -%}
{%- for m in messages -%}
{%- if m.role in ['user', 'developer', 'tool'] -%}
{{- '\n\n' if state.in_user else '<｜User｜>' -}}
{%- set state.in_user = true -%}
{%- if m.role == 'tool' -%}{{- '<tool_result>' + m.content + '</tool_result>' -}}{%- else -%}{{- m.content -}}{%- endif -%}
{%- elif m.role == 'assistant' -%}
{%- set state.in_user = false -%}
{{- '<｜Assistant｜>' -}}
{%- if thinking and loop.index0 > last.user -%}{{- '<think>' + (m.reasoning_content if m.reasoning_content is string else '') + '</think>' -}}{%- else -%}{{- '</think>' -}}{%- endif -%}
{{- m.content if m.content is string else '' -}}
{%- if m.tool_calls -%}
{{- '\n\n<' + dsml_token + 'tool_calls>\n' -}}
{%- for call in m.tool_calls -%}
{%- set f = call.function if call.function is defined else call -%}
{{- '<' + dsml_token + 'invoke name="' + f.name + '">\n' -}}
{%- set args = f.arguments | from_json if f.arguments is string else f.arguments -%}
{%- for k, v in args.items() -%}
{%- if v is string -%}{{- '<' + dsml_token + 'parameter name="' + k + '" string="true">' + v + '</' + dsml_token + 'parameter>\n' -}}
{%- else -%}{{- '<' + dsml_token + 'parameter name="' + k + '" string="false">' + (v | tojson) + '</' + dsml_token + 'parameter>\n' -}}{%- endif -%}
{%- endfor -%}
{{- '</' + dsml_token + 'invoke>\n' -}}
{%- endfor -%}
{{- '</' + dsml_token + 'tool_calls>' -}}
{%- endif -%}
{{- '<｜end▁of▁sentence｜>' -}}
{%- endif -%}
{%- endfor -%}
{%- if add_generation_prompt -%}{{- '<｜Assistant｜>' + ('<think>' if thinking else '</think>') -}}{%- endif -%}`;
