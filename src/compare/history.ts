import { TailgateError } from '../core/index.js';

/** Placeholder until the watch's history lands: the sides a window of a history names. */
export function historySides(_file: string, _a: string, _b: string): Promise<{ a: string[]; b: string[] }> {
  return Promise.reject(new TailgateError('CONFIG_INVALID', '--history needs a watch history (tailgate validate --every)'));
}
