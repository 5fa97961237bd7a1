import { InvalidArgumentError } from 'commander';
import { intArg, numberArg } from './args.js';
import type { MediaOptions } from '../workload/index.js';

/** A value bench accepts, or a one-line usage error saying what it does not do. */
function only<T extends string>(flag: string, accepted: T, why: string) {
  return (value: string): T => {
    if (value.toLowerCase() === accepted) return accepted;
    throw new InvalidArgumentError(`"${value}": ${why} (${flag} ${accepted} is what bench sends)`);
  };
}

/** A repeatable list flag that also takes comma lists, as AIPerf's `--audio-depths 16,24` or `16 24`. */
function numberList(min: number) {
  const one = numberArg(min);
  return (value: string, previous: unknown): number[] => [...((previous as number[] | undefined) ?? []), ...value.split(',').map((v) => one(v.trim()))];
}

/** AIPerf's `--image-*` and `--audio-*` flags, as `tailgate bench` declares them (rows of BENCH_FLAGS). */
export const MEDIA_FLAGS = [
  { key: 'imageWidthMean', flags: '--image-width-mean <px>', description: 'synthetic images: mean width; images are sent when width and height means are > 0 (AIPerf)', parse: numberArg(0) },
  { key: 'imageWidthStddev', flags: '--image-width-stddev <px>', description: 'image width standard deviation', parse: numberArg(0) },
  { key: 'imageHeightMean', flags: '--image-height-mean <px>', description: 'synthetic images: mean height', parse: numberArg(0) },
  { key: 'imageHeightStddev', flags: '--image-height-stddev <px>', description: 'image height standard deviation', parse: numberArg(0) },
  { key: 'imageBatchSize', flags: '--image-batch-size <n>', aliases: ['--batch-size-image'], description: 'images per turn (default 1, as AIPerf)', parse: intArg(0) },
  { key: 'imageFormat', flags: '--image-format <fmt>', description: 'png (AIPerf\'s default; jpeg and random are not encoded by bench)', parse: only('--image-format', 'png', 'bench encodes PNG only, JPEG is not written') },
  { key: 'imageSource', flags: '--image-source <src>', description: 'noise (AIPerf\'s default: random pixels); assets and folders are not read by bench', parse: only('--image-source', 'noise', 'bench draws noise images only; AIPerf\'s bundled assets and image folders are not read') },
  { key: 'imageSourceSampling', flags: '--image-source-sampling <s>', description: 'random-with-replacement (the only one valid with noise, as AIPerf)', parse: only('--image-source-sampling', 'random-with-replacement', 'with --image-source noise AIPerf allows only random-with-replacement') },
  { key: 'audioBatchSize', flags: '--audio-batch-size <n>', aliases: ['--batch-size-audio'], description: 'audio inputs per turn (default 1, as AIPerf)', parse: intArg(0) },
  { key: 'audioLengthMean', flags: '--audio-length-mean <s>', description: 'synthetic audio: mean length in seconds; audio is sent when > 0 (AIPerf)', parse: numberArg(0) },
  { key: 'audioLengthStddev', flags: '--audio-length-stddev <s>', description: 'audio length standard deviation, s', parse: numberArg(0) },
  { key: 'audioFormat', flags: '--audio-format <fmt>', description: 'wav (AIPerf\'s default; mp3 is not encoded by bench)', parse: only('--audio-format', 'wav', 'bench encodes WAV only, MP3 is not written') },
  { key: 'audioDepths', flags: '--audio-depths <bits...>', description: 'bit depths drawn from per clip: 8, 16 (default), 24, 32', parse: numberList(1), variadic: true },
  { key: 'audioSampleRates', flags: '--audio-sample-rates <khz...>', description: 'sample rates drawn from per clip, kHz (default 16)', parse: numberList(0), variadic: true },
  { key: 'audioNumChannels', flags: '--audio-num-channels <n>', description: '1 (mono, default) or 2', parse: intArg(1) },
];

/**
 * The media a command line asks for, with AIPerf's defaults: images when both width and height
 * means are > 0, audio when the length mean is > 0, one of each per turn unless a batch size says
 * otherwise (0 turns them off).
 */
export function mediaOptionsOf(flags: Record<string, unknown>): MediaOptions | undefined {
  const num = (k: string, d: number): number => (flags[k] as number | undefined) ?? d;
  const image = num('imageWidthMean', 0) > 0 && num('imageHeightMean', 0) > 0 && num('imageBatchSize', 1) > 0
    ? { widthMean: num('imageWidthMean', 0), widthStddev: num('imageWidthStddev', 0), heightMean: num('imageHeightMean', 0), heightStddev: num('imageHeightStddev', 0), batchSize: num('imageBatchSize', 1), format: 'png' as const }
    : null;
  const audio = num('audioLengthMean', 0) > 0 && num('audioBatchSize', 1) > 0
    ? {
        lengthMeanS: num('audioLengthMean', 0),
        lengthStddevS: num('audioLengthStddev', 0),
        batchSize: num('audioBatchSize', 1),
        format: 'wav' as const,
        depths: (flags['audioDepths'] as number[] | undefined) ?? [16],
        // AIPerf reads a value above 96 as Hz (16000 for 16 kHz).
        sampleRatesKhz: ((flags['audioSampleRates'] as number[] | undefined) ?? [16]).map((r) => (r > 96 ? r / 1000 : r)),
        channels: num('audioNumChannels', 1),
      }
    : null;
  return image || audio ? { image, audio } : undefined;
}
