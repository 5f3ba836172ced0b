// Wraps a Connect client so every failed call rejects with a PlatformError.
//
// This cannot be an interceptor: the transport passes whatever an interceptor throws through
// ConnectError.from, which turns any other error class back into a plain ConnectError.

import type { DescService } from "@bufbuild/protobuf";
import type { CallOptions, Client } from "@connectrpc/connect";
import { toPlatformError } from "./errors.js";

type AnyMethod = (...args: unknown[]) => unknown;

function rethrow(err: unknown): never {
  throw toPlatformError(err) ?? err;
}

// A streaming response fails while it is read, after the call itself returned. The call runs on a
// signal of its own, aborted when the loop is left (end, error, break or return): Connect's stream
// iterators have no return(), so without it a consumer that stops reading would leave the stream,
// and its connection, open until the server ends it.
function translateStream(call: AnyMethod, args: unknown[]): AsyncIterable<unknown> {
  const [request, options] = args as [unknown, CallOptions | undefined];
  const ctl = new AbortController();
  const outer = options?.signal;
  const onAbort = () => ctl.abort(outer?.reason);
  if (outer?.aborted) ctl.abort(outer.reason);
  else outer?.addEventListener("abort", onAbort, { once: true });
  const messages = call(request, { ...options, signal: ctl.signal }) as AsyncIterable<unknown>;
  return (async function* () {
    try {
      yield* messages;
    } catch (err) {
      rethrow(err);
    } finally {
      outer?.removeEventListener("abort", onAbort);
      ctl.abort();
    }
  })();
}

/** withPlatformErrors returns client with each method translating its failures to PlatformError. */
export function withPlatformErrors<T extends DescService>(service: T, client: Client<T>): Client<T> {
  const methods = client as unknown as Record<string, AnyMethod>;
  const wrapped: Record<string, AnyMethod> = {};
  for (const method of service.methods) {
    const call = methods[method.localName];
    if (call === undefined) continue;
    switch (method.methodKind) {
      case "unary":
      case "client_streaming":
        wrapped[method.localName] = async (...args) => {
          try {
            return await call(...args);
          } catch (err) {
            rethrow(err);
          }
        };
        break;
      case "server_streaming":
      case "bidi_streaming":
        wrapped[method.localName] = (...args) => translateStream(call, args);
        break;
    }
  }
  return Object.freeze(wrapped) as unknown as Client<T>;
}
