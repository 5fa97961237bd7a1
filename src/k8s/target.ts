import { TailgateError } from '../core/index.js';

/** A Service to discover: `k8s://NAMESPACE/SERVICE[:PORT]` (namespace optional, port a number or a port name). */
export interface K8sTarget {
  /** Undefined: the kubeconfig context's namespace (in a pod: the pod's own namespace). */
  namespace: string | undefined;
  service: string;
  /** A number overrides every slice's port; a name picks the slice port of that name; undefined: each slice's own port. */
  port: number | string | undefined;
}

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const PORT_NAME = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

/**
 * Parses `k8s://NAMESPACE/SERVICE[:PORT]` or `k8s://SERVICE[:PORT]`.
 *
 * @example
 * parseK8sTarget('k8s://inference/vllm:8000'); // { namespace: 'inference', service: 'vllm', port: 8000 }
 */
export function parseK8sTarget(text: string): K8sTarget {
  const bad = (why: string): TailgateError =>
    new TailgateError('CONFIG_INVALID', `"${text}" is not a Kubernetes target: ${why} (expected k8s://NAMESPACE/SERVICE[:PORT])`);
  if (!text.startsWith('k8s://')) throw bad('it must start with k8s://');
  const rest = text.slice('k8s://'.length).replace(/\/+$/, '');
  const parts = rest.split('/');
  if (parts.length > 2 || parts.some((p) => p === '')) throw bad('expected one or two path parts');
  const last = parts[parts.length - 1]!;
  const namespace = parts.length === 2 ? parts[0]! : undefined;
  const colon = last.indexOf(':');
  const service = colon < 0 ? last : last.slice(0, colon);
  const portText = colon < 0 ? undefined : last.slice(colon + 1);
  if (namespace !== undefined && !DNS_LABEL.test(namespace)) throw bad(`namespace "${namespace}" is not a DNS label`);
  if (!DNS_LABEL.test(service)) throw bad(`service "${service}" is not a DNS label`);
  let port: number | string | undefined;
  if (portText !== undefined) {
    if (/^\d+$/.test(portText)) {
      port = Number(portText);
      if (port < 1 || port > 65535) throw bad(`port ${portText} is out of range`);
    } else if (PORT_NAME.test(portText)) port = portText;
    else throw bad(`port "${portText}" is neither a number nor a port name`);
  }
  return { namespace, service, port };
}

/** `k8s://ns/svc:port` back, for messages. */
export function formatK8sTarget(t: K8sTarget, namespace = t.namespace): string {
  return `k8s://${namespace !== undefined ? `${namespace}/` : ''}${t.service}${t.port !== undefined ? `:${t.port}` : ''}`;
}
