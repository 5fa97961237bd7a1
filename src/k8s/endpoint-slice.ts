/** The fields of a `discovery.k8s.io/v1` EndpointSlice that discovery reads. */
export interface EndpointSlice {
  apiVersion?: string;
  kind?: string;
  metadata: { name: string; namespace?: string; resourceVersion?: string; labels?: Record<string, string> };
  addressType: 'IPv4' | 'IPv6' | 'FQDN';
  endpoints?: SliceEndpoint[] | null;
  ports?: SlicePort[] | null;
}

export interface SliceEndpoint {
  addresses: string[];
  conditions?: { ready?: boolean | null; serving?: boolean | null; terminating?: boolean | null };
  nodeName?: string;
  zone?: string;
  targetRef?: { kind?: string; name?: string; namespace?: string };
}

export interface SlicePort {
  name?: string;
  port?: number;
  protocol?: string;
  appProtocol?: string;
}

/** One endpoint of the Service as a backend: id `host:port` (the router's worker id) and base URL. */
export interface ServiceEndpoint {
  id: string;
  url: string;
  /** The pod behind it (`targetRef.name`), when the slice names it. */
  pod: string | null;
  node: string | null;
  zone: string | null;
}

/** The endpoints of a Service at one moment: ready ones (routable) and the others (starting, terminating). */
export interface EndpointSnapshot {
  ready: ServiceEndpoint[];
  notReady: ServiceEndpoint[];
}

function slicePort(slice: EndpointSlice, port: number | string | undefined): { port: number; https: boolean } | undefined {
  const tcp = (slice.ports ?? []).filter((p) => (p.protocol ?? 'TCP') === 'TCP');
  const isHttps = (p: SlicePort | undefined): boolean => p?.appProtocol === 'https' || p?.name === 'https';
  if (typeof port === 'number') return { port, https: false };
  if (typeof port === 'string') {
    const p = tcp.find((x) => x.name === port);
    return p?.port !== undefined ? { port: p.port, https: isHttps(p) } : undefined;
  }
  // Several ports and no choice given: the one named http, else the first.
  const p = tcp.length > 1 ? (tcp.find((x) => x.name === 'http') ?? tcp[0]) : tcp[0];
  return p?.port !== undefined ? { port: p.port, https: isHttps(p) } : undefined;
}

/**
 * The endpoints of a set of slices, deduplicated and sorted by id. An endpoint is ready unless its
 * `conditions.ready` is false (the API says to read an unset condition as ready). Only the first
 * address counts: the API says an endpoint's addresses are fungible.
 *
 * @example
 * endpointSnapshot(slices, 8000).ready.map((e) => e.id); // ['10.0.0.7:8000', '10.0.0.9:8000']
 */
export function endpointSnapshot(slices: Iterable<EndpointSlice>, port?: number | string): EndpointSnapshot {
  const ready = new Map<string, ServiceEndpoint>();
  const notReady = new Map<string, ServiceEndpoint>();
  for (const slice of slices) {
    const p = slicePort(slice, port);
    if (!p) continue;
    for (const e of slice.endpoints ?? []) {
      const address = e.addresses?.[0];
      if (address === undefined || address === '') continue;
      const v6 = slice.addressType === 'IPv6' || address.includes(':');
      const id = `${address}:${p.port}`;
      const ep: ServiceEndpoint = {
        id,
        url: `${p.https ? 'https' : 'http'}://${v6 ? `[${address}]` : address}:${p.port}`,
        pod: e.targetRef?.name ?? null,
        node: e.nodeName ?? null,
        zone: e.zone ?? null,
      };
      if (e.conditions?.ready === false) {
        if (!ready.has(id)) notReady.set(id, ep);
      } else {
        ready.set(id, ep);
        notReady.delete(id);
      }
    }
  }
  const byId = (a: ServiceEndpoint, b: ServiceEndpoint): number => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
  return { ready: [...ready.values()].sort(byId), notReady: [...notReady.values()].sort(byId) };
}

/** True when two snapshots name the same endpoints in the same states. */
export function sameSnapshot(a: EndpointSnapshot, b: EndpointSnapshot): boolean {
  const key = (s: EndpointSnapshot): string => `${s.ready.map((e) => e.url).join(',')}|${s.notReady.map((e) => e.url).join(',')}`;
  return key(a) === key(b);
}
