// createComputeClient: one typed client per platform service over one shared transport.

import { createClient, type Client, type Interceptor, type Transport } from "@connectrpc/connect";
import { createConnectTransport, createGrpcWebTransport } from "@connectrpc/connect-web";
import { bearerAuth, type TokenSource } from "./interceptors.js";
import { closeOnAbort } from "./close-on-abort.js";
import { unreachable } from "./errors.js";
import { withPlatformErrors } from "./platform-client.js";
import { retryInterceptor, type RetryOptions } from "./retry.js";
import { services } from "./services.js";

/** ComputeClient holds a typed client for every platform service. */
export type ComputeClient = { readonly [K in keyof typeof services]: Client<(typeof services)[K]> };

/** WireProtocol picks how calls travel: the Connect protocol (default) or gRPC-Web. */
export type WireProtocol = "connect" | "grpc-web";

/** ComputeClientOptions configures createComputeClient. */
export interface ComputeClientOptions {
  /** The server's base URL, e.g. "https://compute.example.com" (no trailing path needed). */
  baseUrl: string;
  /** The bearer token, or a function returning the current one. */
  token: TokenSource;
  /** "connect" (default) or "grpc-web". */
  transport?: WireProtocol;
  /** The fetch to use; defaults to globalThis.fetch (browsers, Node 18+, Deno, Bun). */
  fetch?: typeof globalThis.fetch;
  /** Send protobuf binary instead of JSON (Connect only; gRPC-Web is always binary). */
  useBinaryFormat?: boolean;
  /** Interceptors run after the SDK's own (they see the Authorization header set). */
  interceptors?: Interceptor[];
  /**
   * A deadline applied to every call that sets none itself, in milliseconds. It bounds a call's
   * retries too. watchEvents() and waitForLoadBalancer() open their streams without one.
   */
  defaultTimeoutMs?: number;
  /** Retry reads and keyed creates that fail UNAVAILABLE (true: the defaults; see RetryOptions). */
  retry?: RetryOptions | boolean;
}

/** sdkInterceptors are installed on every transport the SDK builds, outermost first. */
export function sdkInterceptors(token: TokenSource, extra: Interceptor[] = [], retry?: RetryOptions | boolean): Interceptor[] {
  const retries = retry ? [retryInterceptor(retry === true ? {} : retry)] : [];
  return [...retries, bearerAuth(token), ...extra];
}

/**
 * clientsFor builds a ComputeClient over any Connect transport; its calls reject with PlatformError.
 * Give the transport sdkInterceptors(token) to authenticate.
 */
export function clientsFor(transport: Transport): ComputeClient {
  const entries = Object.entries(services).map(([name, service]) => [
    name,
    withPlatformErrors(service, createClient(service, transport)),
  ]);
  // Object.fromEntries loses the per-key types the mapped type restores.
  return Object.freeze(Object.fromEntries(entries)) as ComputeClient;
}

/**
 * createComputeClient returns typed clients for every platform service, authenticated with the
 * bearer token. It uses fetch, so it runs in browsers and in Node alike; every failed call rejects
 * with a PlatformError.
 */
export function createComputeClient(options: ComputeClientOptions): ComputeClient {
  const common = {
    baseUrl: options.baseUrl,
    interceptors: sdkInterceptors(options.token, options.interceptors, options.retry),
    // Bound late so a fetch patched after the client was made is the one used. closeOnAbort: an
    // aborted call closes its response body even where the fetch lost track of the signal.
    fetch: unreachable(closeOnAbort(options.fetch ?? ((input, init) => globalThis.fetch(input, init)))),
    ...(options.defaultTimeoutMs !== undefined ? { defaultTimeoutMs: options.defaultTimeoutMs } : {}),
  };
  const protocol = options.transport ?? "connect";
  let transport: Transport;
  switch (protocol) {
    case "connect":
      transport = createConnectTransport({ ...common, useBinaryFormat: options.useBinaryFormat ?? false });
      break;
    case "grpc-web":
      transport = createGrpcWebTransport(common);
      break;
    default:
      throw new Error(`unknown transport ${String(protocol satisfies never)}`);
  }
  return clientsFor(transport);
}
