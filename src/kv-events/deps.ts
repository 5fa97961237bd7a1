// zeromq and @msgpack/msgpack are loaded at first use, not at import: a fleet or router without
// KV events never loads them (nor zeromq's native addon), and a checkout whose node_modules lacks
// them still builds, type-checks and runs everything else. The few calls used are typed here.
import { createRequire } from 'node:module';

type Frames = (Buffer | string)[];

/** What this folder uses of a zeromq v6 socket. */
export interface ZmqSocket {
  readonly lastEndpoint: string | null;
  connect(endpoint: string): void;
  bind(endpoint: string): Promise<void>;
  close(): void;
}

export interface ZmqPublisher extends ZmqSocket {
  send(frames: Frames): Promise<void>;
}

export interface ZmqRouter extends ZmqSocket, AsyncIterable<Buffer[]> {
  send(frames: Frames): Promise<void>;
}

export interface ZmqSubscriber extends ZmqSocket, AsyncIterable<Buffer[]> {
  subscribe(topic: string): void;
}

export interface ZmqDealer extends ZmqSocket {
  send(frames: Frames): Promise<void>;
  receive(): Promise<Buffer[]>;
}

interface SocketOptions {
  linger?: number;
  sendHighWaterMark?: number;
  receiveTimeout?: number;
}

/** The part of the zeromq module this folder uses. */
export interface ZmqModule {
  Publisher: new (opts?: SocketOptions) => ZmqPublisher;
  Router: new (opts?: SocketOptions) => ZmqRouter;
  Subscriber: new (opts?: SocketOptions) => ZmqSubscriber;
  Dealer: new (opts?: SocketOptions) => ZmqDealer;
}

const require = createRequire(import.meta.url);
let zmq: ZmqModule | null = null;
let decode: ((bytes: Uint8Array, opts: { useBigInt64: boolean }) => unknown) | null = null;

/** The zeromq module (its native addon loads on the first call). */
export function zeromq(): ZmqModule {
  return (zmq ??= require('zeromq') as ZmqModule);
}

/** @msgpack/msgpack's decode, 64-bit integers as bigints. */
export function msgpackDecode(bytes: Uint8Array): unknown {
  decode ??= (require('@msgpack/msgpack') as { decode: typeof decode & object }).decode;
  return decode(bytes, { useBigInt64: true });
}
