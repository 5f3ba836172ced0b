// @better-compute/sdk/node: the same clients over Node's own http/http2 stack (connect-node), which
// adds the gRPC protocol and HTTP/2 connection reuse. Never imported by the browser entry point.

import type { Interceptor } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport, createGrpcWebTransport } from "@connectrpc/connect-node";
import { clientsFor, sdkInterceptors, type ComputeClient } from "./client.js";
import type { TokenSource } from "./interceptors.js";
import type { RetryOptions } from "./retry.js";

/** NodeComputeClientOptions configures createNodeComputeClient. */
export interface NodeComputeClientOptions {
  /** The server's base URL. */
  baseUrl: string;
  /** The bearer token, or a function returning the current one. */
  token: TokenSource;
  /** "connect" (default), "grpc-web" or "grpc" (gRPC always uses HTTP/2). */
  transport?: "connect" | "grpc-web" | "grpc";
  /** "1.1" or "2" (default "2"; a plain-http URL then speaks HTTP/2 without TLS, h2c). */
  httpVersion?: "1.1" | "2";
  /** Send protobuf binary instead of JSON (Connect only). */
  useBinaryFormat?: boolean;
  /** Interceptors run after the SDK's own. */
  interceptors?: Interceptor[];
  /** A deadline applied to every call that sets none itself, in milliseconds (streams of the helpers excepted). */
  defaultTimeoutMs?: number;
  /** Retry reads and keyed creates that fail UNAVAILABLE (true: the defaults; see RetryOptions). */
  retry?: RetryOptions | boolean;
}

/** createNodeComputeClient returns typed clients for every platform service over connect-node. */
export function createNodeComputeClient(options: NodeComputeClientOptions): ComputeClient {
  const common = {
    baseUrl: options.baseUrl,
    interceptors: sdkInterceptors(options.token, options.interceptors, options.retry),
    ...(options.defaultTimeoutMs !== undefined ? { defaultTimeoutMs: options.defaultTimeoutMs } : {}),
  };
  const httpVersion = options.httpVersion ?? "2";
  const protocol = options.transport ?? "connect";
  switch (protocol) {
    case "connect":
      return clientsFor(
        createConnectTransport({ ...common, httpVersion, useBinaryFormat: options.useBinaryFormat ?? false }),
      );
    case "grpc-web":
      return clientsFor(createGrpcWebTransport({ ...common, httpVersion }));
    case "grpc":
      return clientsFor(createGrpcTransport(common));
    default:
      throw new Error(`unknown transport ${String(protocol satisfies never)}`);
  }
}

export * from "./index.js";
