import type { MediaItem } from '../openai/index.js';

/**
 * How a served model turns an image into prompt tokens, as vLLM's Qwen2-VL processor counts them
 * (vllm/model_executor/models/qwen2_vl.py `_get_vision_info`): the image is resized by
 * `smart_resize` to multiples of patch x merge within [minPixels, maxPixels], then
 * (h / patch) x (w / patch) patches are merged merge^2 to one token.
 */
export interface ImageTokenProfile {
  patchSize: number;
  mergeSize: number;
  minPixels: number;
  maxPixels: number;
  /** Tokens the chat template wraps each image in (Qwen2-VL: <|vision_start|> and <|vision_end|>). */
  wrapTokens: number;
}

/**
 * How a served model turns audio into prompt tokens, as vLLM's Qwen2-Audio processor counts them
 * (vllm/model_executor/models/qwen2_audio.py): the clip, resampled to `sampleRateHz`, gives one mel
 * frame per `hopLength` samples (at most `maxFrames`, Whisper's 30 s window); the encoder's two
 * stride-2 stages leave ((frames - 1) // 2 + 1 - 2) // 2 + 1 tokens.
 */
export interface AudioTokenProfile {
  sampleRateHz: number;
  hopLength: number;
  maxFrames: number;
  /** Tokens the chat template wraps each clip in (Qwen2-Audio: <|audio_bos|> and <|audio_eos|>). */
  wrapTokens: number;
}

/** The multimodal token counts of a fleet's served model. */
export interface MultimodalProfile {
  image: ImageTokenProfile;
  audio: AudioTokenProfile;
}

/**
 * Qwen2-VL's image processor (preprocessor_config.json of Qwen/Qwen2-VL-2B-Instruct: min_pixels
 * 3136, max_pixels 12845056, patch_size 14, merge_size 2) and Qwen2-Audio's Whisper feature
 * extractor (16 kHz, hop 160, 30 s): the fleet's default multimodal profile.
 */
export const QWEN2_MULTIMODAL: MultimodalProfile = {
  image: { patchSize: 14, mergeSize: 2, minPixels: 3136, maxPixels: 12_845_056, wrapTokens: 2 },
  audio: { sampleRateHz: 16_000, hopLength: 160, maxFrames: 3000, wrapTokens: 2 },
};

/** Python's round(): halves to even, as `smart_resize`'s round_by_factor does. */
function pyRound(x: number): number {
  const f = Math.floor(x);
  const d = x - f;
  if (d > 0.5) return f + 1;
  if (d < 0.5) return f;
  return f % 2 === 0 ? f : f + 1;
}

/**
 * Tokens of one image of `width` x `height` pixels.
 *
 * @example imageTokens(512, 512, QWEN2_MULTIMODAL.image) // 326: resized to 504 x 504, 36 x 36 patches / 4 = 324, + 2
 */
export function imageTokens(width: number, height: number, p: ImageTokenProfile): number {
  const factor = p.patchSize * p.mergeSize;
  let h = pyRound(height / factor) * factor;
  let w = pyRound(width / factor) * factor;
  if (h * w > p.maxPixels) {
    const beta = Math.sqrt((height * width) / p.maxPixels);
    h = Math.max(factor, Math.floor(height / beta / factor) * factor);
    w = Math.max(factor, Math.floor(width / beta / factor) * factor);
  } else if (h * w < p.minPixels) {
    const beta = Math.sqrt(p.minPixels / (height * width));
    h = Math.ceil((height * beta) / factor) * factor;
    w = Math.ceil((width * beta) / factor) * factor;
  }
  return ((h / p.patchSize) * (w / p.patchSize)) / (p.mergeSize * p.mergeSize) + p.wrapTokens;
}

/**
 * Tokens of one audio clip of `seconds`.
 *
 * @example audioTokens(5, QWEN2_MULTIMODAL.audio) // 500 frames -> 250 -> 125, + 2
 */
export function audioTokens(seconds: number, p: AudioTokenProfile): number {
  const frames = Math.min(p.maxFrames, Math.ceil((seconds * p.sampleRateHz) / p.hopLength));
  if (frames < 1) return p.wrapTokens;
  const feat = Math.floor((frames - 1) / 2) + 1;
  return Math.max(0, Math.floor((feat - 2) / 2) + 1) + p.wrapTokens;
}

/** Tokens of one media item under a profile. */
export function mediaTokens(item: MediaItem, p: MultimodalProfile): number {
  return item.kind === 'image' ? imageTokens(item.width, item.height, p.image) : audioTokens(item.seconds, p.audio);
}

/**
 * The prompt's token ids with each media item's placeholder tokens appended: ids derived from the
 * item's content hash, so the same image is the same cached blocks and a different one is not (as
 * vLLM keys its prefix cache on the multimodal hash). A prompt without media is returned as is.
 */
export function withMediaIds(textIds: ArrayLike<number>, media: readonly MediaItem[] | undefined, p: MultimodalProfile): ArrayLike<number> {
  if (!media || media.length === 0) return textIds;
  const counts = media.map((m) => mediaTokens(m, p));
  const out = new Uint32Array(textIds.length + counts.reduce((a, b) => a + b, 0));
  out.set(textIds);
  let at = textIds.length;
  media.forEach((m, k) => {
    for (let i = 0; i < counts[k]!; i++) out[at++] = (Math.imul(m.hash ^ i, 0x9e3779b1) >>> 0) | 0x80000000;
  });
  return out;
}
