import { InvalidArgumentError } from 'commander';
import { choiceArg, intArg, numberArg } from './args.js';
import type { MediaOptions } from '../workload/index.js';
import type { BenchDefaults, BenchOptions } from '../bench/index.js';
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

/** What synthetic media are when a flag does not say (BENCH_DEFAULTS.media). */
type MediaDefaults = BenchDefaults['media'];

/** AIPerf's `--image-*` and `--audio-*` flags, as `tailgate bench` declares them (rows of its table), with their defaults from `M`. */
export function mediaFlags(M: MediaDefaults) {
  return {
    imageWidthMean: row({ arg: '<px>', help: 'synthetic images: mean width; images are sent when width and height means are > 0 (AIPerf)', parse: numberArg(0) }),
    imageWidthStddev: row({ arg: '<px>', help: 'image width standard deviation', parse: numberArg(0) }),
    imageHeightMean: row({ arg: '<px>', help: 'synthetic images: mean height', parse: numberArg(0) }),
    imageHeightStddev: row({ arg: '<px>', help: 'image height standard deviation', parse: numberArg(0) }),
    imageBatchSize: row({ arg: '<n>', aliases: ['--batch-size-image'], help: 'images per turn', parse: intArg(0), defaultNote: `${M.batchSize}, as AIPerf` }),
    imageFormat: row({ arg: '<fmt>', help: 'png, jpeg (baseline, quality 75) or random (each image png or jpeg)', parse: choiceArg(['png', 'jpeg', 'random'] as const), defaultNote: `${M.imageFormat}, AIPerf's` }),
    imageSource: row({ arg: '<src>', help: 'noise (AIPerf\'s default: random pixels); assets and folders are not read by bench', parse: only('--image-source', 'noise', 'bench draws noise images only; AIPerf\'s bundled assets and image folders are not read') }),
    imageSourceSampling: row({ arg: '<s>', help: 'random-with-replacement (the only one valid with noise, as AIPerf)', parse: only('--image-source-sampling', 'random-with-replacement', 'with --image-source noise AIPerf allows only random-with-replacement') }),
    audioBatchSize: row({ arg: '<n>', aliases: ['--batch-size-audio'], help: 'audio inputs per turn', parse: intArg(0), defaultNote: `${M.batchSize}, as AIPerf` }),
    audioLengthMean: row({ arg: '<s>', help: 'synthetic audio: mean length in seconds; audio is sent when > 0 (AIPerf)', parse: numberArg(0) }),
    audioLengthStddev: row({ arg: '<s>', help: 'audio length standard deviation, s', parse: numberArg(0) }),
    audioFormat: row({ arg: '<fmt>', help: 'wav (AIPerf\'s default; mp3 is not encoded by bench)', parse: only('--audio-format', 'wav', 'bench encodes WAV only, MP3 is not written') }),
    audioDepths: row({ arg: '<bits...>', help: 'bit depths drawn from per clip: 8, 16, 24, 32', parse: numberList(1), defaultNote: String(M.audioDepth) }),
    audioSampleRates: row({ arg: '<khz...>', help: 'sample rates drawn from per clip, kHz', parse: numberList(0), defaultNote: String(M.audioSampleRateKhz) }),
    audioNumChannels: row({ arg: '<n>', help: '1 (mono) or 2', parse: intArg(1), defaultNote: String(M.audioChannels) }),
  };
}

/** The media flags as parsed. */
type MediaFlags = FlagsOf<ReturnType<typeof mediaFlags>>;

type NumberKey = { [K in keyof MediaFlags]: MediaFlags[K] extends number | undefined ? K : never }[keyof MediaFlags];

/**
 * The media a command line asks for, with AIPerf's defaults (`M`): images when both width and height
 * means are > 0, audio when the length mean is > 0, one of each per turn unless a batch size says
 * otherwise (0 turns them off).
 */
export function mediaOptionsOf(flags: MediaFlags, M: MediaDefaults): MediaOptions | undefined {
  const num = (k: NumberKey, d: number): number => flags[k] ?? d;
  const image = num('imageWidthMean', 0) > 0 && num('imageHeightMean', 0) > 0 && num('imageBatchSize', M.batchSize) > 0
    ? { widthMean: num('imageWidthMean', 0), widthStddev: num('imageWidthStddev', 0), heightMean: num('imageHeightMean', 0), heightStddev: num('imageHeightStddev', 0), batchSize: num('imageBatchSize', M.batchSize), format: flags.imageFormat ?? M.imageFormat }
    : null;
  const audio = num('audioLengthMean', 0) > 0 && num('audioBatchSize', M.batchSize) > 0
    ? {
        lengthMeanS: num('audioLengthMean', 0),
        lengthStddevS: num('audioLengthStddev', 0),
        batchSize: num('audioBatchSize', M.batchSize),
        format: 'wav' as const,
        depths: flags.audioDepths ?? [M.audioDepth],
        // AIPerf reads a value above 96 as Hz (16000 for 16 kHz).
        sampleRatesKhz: (flags.audioSampleRates ?? [M.audioSampleRateKhz]).map((r) => (r > 96 ? r / 1000 : r)),
        channels: num('audioNumChannels', M.audioChannels),
      }
    : null;
  return image || audio ? { image, audio } : undefined;
}
