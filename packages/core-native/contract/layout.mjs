// THE model-layout rule both sides apply to a GGUF: which tensors are the routed experts (streamed
// from the file; everything else is dense and stays resident). @bmoe/gguf's describe (bmoe info,
// the settings rule, the bench) and core-native's layout/expert_layout.cpp (the streamer) must
// agree on it byte for byte; scripts/contract.mjs writes it into include/bmoe/contract/layout.h
// and packages/gguf/src/expert-tensor.ts. An ECMAScript regular expression (std::regex's default
// grammar is ECMAScript too): group 1 = the layer, group 2 = the projection.
export const EXPERT_TENSOR_PATTERN = String.raw`^blk\.(\d+)\.ffn_(gate|up|down|gate_up)_exps\.weight$`;
