import { InvalidArgumentError } from 'commander';
import { choiceArg, intArg, numberArg } from './args.js';
import type { MediaOptions } from '../workload/index.js';
import type { BenchOptions } from '../bench/index.js';
import { rowsFor, type FlagsOf } from './option-table.js';

const row = rowsFor<BenchOptions>();

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
  return (value: string, previous: number[] | undefined): number[] => [...(previous ?? []), ...value.split(',').map((v) => one(v.trim()))];
}

/** AIPerf's `--image-*` and `--audio-*` flags, as `tailgate bench` declares them (rows of BENCH_FLAGS). */
export const MEDIA_FLAGS = {
  imageWidthMean: row({ arg: '<px>', help: 'synthetic images: mean width; images are sent when width and height means are > 0 (AIPerf)', parse: numberArg(0) }),
  imageWidthStddev: row({ arg: '<px>', help: 'image width standard deviation', parse: numberArg(0) }),
  imageHeightMean: row({ arg: '<px>', help: 'synthetic images: mean height', parse: numberArg(0) }),
  imageHeightStddev: row({ arg: '<px>', help: 'image height standard deviation', parse: numberArg(0) }),
  imageBatchSize: row({ arg: '<n>', aliases: ['--batch-size-image'], help: 'images per turn (default 1, as AIPerf)', parse: intArg(0) }),
  imageFormat: row({ arg: '<fmt>', help: 'png (AIPerf\'s default), jpeg (baseline, quality 75) or random (each image png or jpeg)', parse: choiceArg(['png', 'jpeg', 'random'] as const) }),
  imageSource: row({ arg: '<src>', help: 'noise (AIPerf\'s default: random pixels); assets and folders are not read by bench', parse: only('--image-source', 'noise', 'bench draws noise images only; AIPerf\'s bundled assets and image folders are not read') }),
  imageSourceSampling: row({ arg: '<s>', help: 'random-with-replacement (the only one valid with noise, as AIPerf)', parse: only('--image-source-sampling', 'random-with-replacement', 'with --image-source noise AIPerf allows only random-with-replacement') }),
  audioBatchSize: row({ arg: '<n>', aliases: ['--batch-size-audio'], help: 'audio inputs per turn (default 1, as AIPerf)', parse: intArg(0) }),
  audioLengthMean: row({ arg: '<s>', help: 'synthetic audio: mean length in seconds; audio is sent when > 0 (AIPerf)', parse: numberArg(0) }),
  audioLengthStddev: row({ arg: '<s>', help: 'audio length standard deviation, s', parse: numberArg(0) }),
  audioFormat: row({ arg: '<fmt>', help: 'wav (AIPerf\'s default; mp3 is not encoded by bench)', parse: only('--audio-format', 'wav', 'bench encodes WAV only, MP3 is not written') }),
  audioDepths: row({ arg: '<bits...>', help: 'bit depths drawn from per clip: 8, 16 (default), 24, 32', parse: numberList(1) }),
  audioSampleRates: row({ arg: '<khz...>', help: 'sample rates drawn from per clip, kHz (default 16)', parse: numberList(0) }),
  audioNumChannels: row({ arg: '<n>', help: '1 (mono, default) or 2', parse: intArg(1) }),
};

type NumberKey = { [K in keyof typeof MEDIA_FLAGS]: FlagsOf<typeof MEDIA_FLAGS>[K] extends number | undefined ? K : never }[keyof typeof MEDIA_FLAGS];

/**
 * The media a command line asks for, with AIPerf's defaults: images when both width and height
 * means are > 0, audio when the length mean is > 0, one of each per turn unless a batch size says
 * otherwise (0 turns them off).
 */
export function mediaOptionsOf(flags: FlagsOf<typeof MEDIA_FLAGS>): MediaOptions | undefined {
  const num = (k: NumberKey, d: number): number => flags[k] ?? d;
  const image = num('imageWidthMean', 0) > 0 && num('imageHeightMean', 0) > 0 && num('imageBatchSize', 1) > 0
    ? { widthMean: num('imageWidthMean', 0), widthStddev: num('imageWidthStddev', 0), heightMean: num('imageHeightMean', 0), heightStddev: num('imageHeightStddev', 0), batchSize: num('imageBatchSize', 1), format: flags.imageFormat ?? 'png' }
    : null;
  const audio = num('audioLengthMean', 0) > 0 && num('audioBatchSize', 1) > 0
    ? {
        lengthMeanS: num('audioLengthMean', 0),
        lengthStddevS: num('audioLengthStddev', 0),
        batchSize: num('audioBatchSize', 1),
        format: 'wav' as const,
        depths: flags.audioDepths ?? [16],
        // AIPerf reads a value above 96 as Hz (16000 for 16 kHz).
        sampleRatesKhz: (flags.audioSampleRates ?? [16]).map((r) => (r > 96 ? r / 1000 : r)),
        channels: num('audioNumChannels', 1),
      }
    : null;
  return image || audio ? { image, audio } : undefined;
}
