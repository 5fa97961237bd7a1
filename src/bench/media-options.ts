import { TailgateError } from '../core/index.js';
import { checkMediaOptions, type MediaOptions } from '../workload/index.js';
import type { EndpointType } from './payload.js';

/** No images, no audio: what a run sends unless `--image-*`/`--audio-*` ask for them. */
export const NO_MEDIA: MediaOptions = { image: null, audio: null };

/**
 * The media of a run, checked: AIPerf generates images and audio for synthetic datasets only and
 * sends them in chat messages, so a trace, a public dataset or another endpoint type is refused
 * rather than run without them.
 *
 * @throws TailgateError CONFIG_INVALID
 */
export function resolveMedia(m: MediaOptions | undefined, workloadKind: string, endpointType: EndpointType): MediaOptions {
  if (!m || (!m.image && !m.audio)) return NO_MEDIA;
  const what = m.image ? '--image-width-mean/--image-height-mean' : '--audio-length-mean';
  if (workloadKind !== 'synthetic') throw new TailgateError('CONFIG_INVALID', `${what}: synthetic images and audio go with synthetic prompts only (AIPerf refuses them with --input-file or --public-dataset too)`);
  if (endpointType !== 'chat') throw new TailgateError('CONFIG_INVALID', `${what}: images and audio are sent as chat content parts: use --endpoint-type chat`);
  checkMediaOptions(m);
  return m;
}

/** The `input.image`/`input.audio` sections of the exports' input config (AIPerf's names). */
export function mediaInputConfig(m: MediaOptions): Record<string, unknown> {
  return {
    ...(m.image && {
      image: { width: { mean: m.image.widthMean, stddev: m.image.widthStddev }, height: { mean: m.image.heightMean, stddev: m.image.heightStddev }, batch_size: m.image.batchSize, format: m.image.format, source: 'noise' },
    }),
    ...(m.audio && {
      audio: { batch_size: m.audio.batchSize, length: { mean: m.audio.lengthMeanS, stddev: m.audio.lengthStddevS }, format: m.audio.format, depths: m.audio.depths, sample_rates: m.audio.sampleRatesKhz, num_channels: m.audio.channels },
    }),
  };
}
