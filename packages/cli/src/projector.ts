// The image projector (mmproj GGUF) a command loads or describes with a model: `--mmproj FILE` or
// `none` as given; otherwise the projector `bmoe pull` fetched with the model, which the pull's
// manifest pairs with it (pulled files are named owner+repo+path, which the engine's 'auto', an
// `mmproj*.gguf` beside the model, does not match — rightly: the models folder holds the
// projectors of many models); otherwise the engine's 'auto'.

/**
 * The `mmproj` load option for `model`: --mmproj as given (a path, or 'none'), else the projector
 * pulled with it, else what was given ('auto' or nothing: the engine's 'auto').
 */
export async function projectorOption(model: string, given: string | undefined): Promise<string | undefined> {
  if (given !== undefined && given !== 'auto') return given;
  const { pulledProjector } = await import('./hub/index.js');
  return (await pulledProjector(model)) ?? given;
}

/** The projector file loading `model` with `mmproj` (a projectorOption) takes, or null: none. */
export async function projectorPath(model: string, mmproj: string | undefined): Promise<string | null> {
  if (mmproj === 'none') return null;
  if (mmproj !== undefined && mmproj !== 'auto') return mmproj;
  const { findProjector } = await import('@bmoe/engine');
  return findProjector(model);
}
