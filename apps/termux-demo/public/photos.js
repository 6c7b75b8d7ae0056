// Photos in the chat: a picked or taken image made into the data URL an OpenAI `image_url` part
// carries, the composer's row of photos waiting to be sent, and whether the loaded model takes
// images at all (what the server says about it).

/** Longest side, in pixels, of a photo as sent. */
export const MAX_SIDE = 1024;
const JPEG_QUALITY = 0.85;
/** A PNG or JPEG within MAX_SIDE and this size is sent as it is. */
const KEEP_BYTES = 512 * 1024;

/** A file's bytes as a data URL. */
function readDataUrl(file) {
  return new Promise((resolve, reject) => {
    const reader = new FileReader();
    reader.onload = () => resolve(reader.result);
    reader.onerror = () => reject(reader.error ?? new Error(`${file.name}: could not be read`));
    reader.readAsDataURL(file);
  });
}

/**
 * A picked file as it is sent: `url`, the data URL; `viewable`, false for a file this browser
 * cannot decode (shown by its name). A phone's camera takes 12 MP and more: as it is, a photo is
 * 3 to 6 MB, 4/3 of that as base64, on every turn of the conversation (the history carries it),
 * while the vision encoder works at a few hundred pixels a side anyway. So a big photo is drawn
 * smaller on a canvas here, longest side MAX_SIDE, and sent as a JPEG of some 100–300 KB; a small
 * PNG or JPEG goes as it is. A file this browser cannot decode goes as it is too: the server says
 * whether it reads it (and why not).
 */
export async function preparePhoto(file) {
  let bitmap;
  try {
    // 'from-image': turned upright as the camera's EXIF orientation says (the canvas keeps it).
    bitmap = await createImageBitmap(file, { imageOrientation: 'from-image' });
  } catch {
    return { url: await readDataUrl(file), name: file.name, viewable: false };
  }
  return { url: await photoUrl(file, bitmap), name: file.name, viewable: true };
}

/** The data URL of a decoded photo: the file as it is when small, else drawn smaller as a JPEG. */
async function photoUrl(file, bitmap) {
  try {
    const { width, height } = bitmap;
    const longest = Math.max(width, height);
    if ((file.type === 'image/png' || file.type === 'image/jpeg') && longest <= MAX_SIDE && file.size <= KEEP_BYTES) return await readDataUrl(file);
    const scale = Math.min(1, MAX_SIDE / longest);
    const canvas = document.createElement('canvas');
    canvas.width = Math.max(1, Math.round(width * scale));
    canvas.height = Math.max(1, Math.round(height * scale));
    const ctx = canvas.getContext('2d');
    ctx.fillStyle = '#fff'; // JPEG has no transparency: a transparent PNG goes on white
    ctx.fillRect(0, 0, canvas.width, canvas.height);
    ctx.imageSmoothingQuality = 'high';
    ctx.drawImage(bitmap, 0, 0, canvas.width, canvas.height);
    return canvas.toDataURL('image/jpeg', JPEG_QUALITY);
  } finally {
    bitmap.close();
  }
}

const IMAGE_WORDS = ['image', 'vision', 'multimodal'];

/**
 * What a `/v1/models` entry or llama-server's `/props` says about images: true or false, or null
 * when it does not say. Read defensively, in the shapes servers use: `architecture:
 * { input_modalities: ['text', 'image'] }` (bmoe's /v1/models, as OpenRouter's), `modalities:
 * { vision: true }` (llama-server's /props), `modalities: [...]`, `capabilities: ['multimodal']`.
 */
export function saysImages(x) {
  if (!x || typeof x !== 'object') return null;
  for (const o of [x, x.architecture, x.meta]) {
    if (!o || typeof o !== 'object') continue;
    for (const v of [o.input_modalities, o.modalities, o.capabilities]) {
      if (Array.isArray(v)) return v.some((m) => IMAGE_WORDS.includes(m));
      if (v && typeof v === 'object' && typeof v.vision === 'boolean') return v.vision;
    }
  }
  return null;
}

/** A photo's picture (or, for one the browser cannot show, its name), for a thumbnail or a bubble. */
export function photoView(photo) {
  if (!photo.viewable) {
    const span = document.createElement('span');
    span.className = 'unviewable';
    span.textContent = photo.name;
    return span;
  }
  const img = document.createElement('img');
  img.src = photo.url;
  img.alt = photo.name;
  return img;
}

/**
 * The composer's photos waiting to be sent: thumbnails in `container`, each with a remove button.
 * `onChange` is called whenever the list changes or a photo is being prepared.
 */
export class PendingPhotos {
  constructor(container, onChange) {
    this.container = container;
    this.onChange = onChange;
    this.photos = []; // preparePhoto's
    this.preparing = 0;
  }

  get count() {
    return this.photos.length;
  }

  /** Prepares and adds picked files; one that fails to be read is reported to `onError`. */
  async add(files, onError) {
    this.preparing += files.length;
    this.onChange();
    for (const file of files) {
      try {
        this.photos.push(await preparePhoto(file));
      } catch (err) {
        onError(`${file.name}: ${err.message}`);
      } finally {
        this.preparing--;
        this.render();
      }
    }
  }

  /** Hands the photos over (for sending) and empties the composer's row. */
  take() {
    const taken = this.photos;
    this.photos = [];
    this.render();
    return taken;
  }

  /** Puts photos back (a request the server refused), before any added since. */
  restore(photos) {
    this.photos = [...photos, ...this.photos];
    this.render();
  }

  clear() {
    this.take();
  }

  render() {
    this.container.replaceChildren(
      ...this.photos.map((p, i) => {
        const fig = document.createElement('figure');
        fig.className = 'thumb';
        const remove = document.createElement('button');
        remove.type = 'button';
        remove.className = 'remove';
        remove.setAttribute('aria-label', `remove ${p.name}`);
        remove.textContent = '✕';
        remove.addEventListener('click', () => {
          this.photos.splice(i, 1);
          this.render();
        });
        fig.append(photoView(p), remove);
        return fig;
      }),
    );
    this.container.hidden = this.photos.length === 0;
    this.onChange();
  }
}
