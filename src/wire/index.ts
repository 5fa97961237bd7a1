// HTTP/1.1 on raw sockets, once, for the bench's transport and the router's upstream (each keeps its own hot path).
export type { BodyFraming, HeadRead, ResponseHead } from './head.js';
export { HeadReader, bodyFraming, parseResponseHead } from './head.js';
export type { PayloadSink } from './chunked.js';
export { BodyScanner, decodeBody, hexDigit } from './chunked.js';
export type { ConnectionReader, ConnectionWaiter, KeepAlivePoolOptions } from './pool.js';
export { Connection, KeepAlivePool, WireError } from './pool.js';
export { encodeRequest } from './request.js';
