// Safe retries: reads and keyed creates are resent after UNAVAILABLE; nothing else is.

import { ConnectError, type Interceptor } from "@connectrpc/connect";
import { MethodOptions_IdempotencyLevel } from "@bufbuild/protobuf/wkt";
import { ErrorInfoSchema } from "./error-info.js";
import { PLATFORM_ERROR_DOMAIN, toPlatformError } from "./errors.js";

/**
 * RetryOptions: how a client retries calls that failed UNAVAILABLE. Only calls safe to repeat are
 * retried: reads (methods marked NO_SIDE_EFFECTS: every get and list) and creates that carry an
 * idempotencyKey (the server answers a repeat with the first result). Updates, deletes, creates
 * without a key and the metal verbs are sent once: a lost answer cannot say whether they happened.
 * A call you cancelled, or whose deadline passed, is never retried.
 */
export interface RetryOptions {
  /** How many times a call is sent at most, the first included (default 4). */
  maxAttempts?: number;
  /** The pause before the second attempt in ms, doubled each further one, jittered (default 100). */
  initialBackoffMs?: number;
  /** The longest pause in ms (default 2000). */
  maxBackoffMs?: number;
}

/** backoffMs is the jittered pause before attempt n (n >= 2). */
export function backoffMs(initial: number, max: number, n: number): number {
  const d = Math.min(initial * 2 ** Math.max(0, n - 2), max);
  return d / 2 + Math.random() * (d / 2);
}

/** sleep waits ms, or until signal aborts (then resolves false). */
export function sleep(ms: number, signal?: AbortSignal): Promise<boolean> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve(false);
    const onAbort = () => {
      clearTimeout(timer);
      resolve(false);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve(true);
    }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

/** hasPlatformInfo: the error carries the platform's ErrorInfo (the platform itself answered). */
export function hasPlatformInfo(err: unknown): boolean {
  const ce = err instanceof ConnectError ? err : err instanceof Error && err.cause instanceof ConnectError ? err.cause : undefined;
  return ce !== undefined && ce.findDetails(ErrorInfoSchema).some((d) => d.domain === PLATFORM_ERROR_DOMAIN);
}

/** isTransient: the error says the same call may succeed later (UNAVAILABLE). */
export function isTransient(err: unknown): boolean {
  return toPlatformError(err)?.code === "UNAVAILABLE";
}

/** retryInterceptor carries out RetryOptions; createComputeClient installs it given `retry`. */
export function retryInterceptor(options: RetryOptions = {}): Interceptor {
  const max = options.maxAttempts ?? 4;
  const initial = options.initialBackoffMs ?? 100;
  const cap = options.maxBackoffMs ?? 2000;
  return (next) => async (req) => {
    if (req.stream) {
      return next(req);
    }
    const key = (req.message as { idempotencyKey?: unknown }).idempotencyKey;
    const safe =
      req.method.idempotency === MethodOptions_IdempotencyLevel.NO_SIDE_EFFECTS || (typeof key === "string" && key !== "");
    if (!safe) {
      return next(req);
    }
    for (let attempt = 1; ; attempt++) {
      try {
        return await next(req);
      } catch (err) {
        if (attempt >= max || req.signal.aborted || !isTransient(err)) throw err;
        if (!(await sleep(backoffMs(initial, cap, attempt + 1), req.signal))) throw err;
      }
    }
  };
}
