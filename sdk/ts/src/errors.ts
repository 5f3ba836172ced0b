// The platform's typed error: every failed call surfaces as a PlatformError carrying the reason the
// server put in google.rpc.ErrorInfo, so callers branch on `code` instead of parsing messages.

import { Code, ConnectError } from "@connectrpc/connect";
import { ErrorInfoSchema } from "./error-info.js";

/** PLATFORM_ERROR_DOMAIN is the ErrorInfo domain of the platform's reasons. */
export const PLATFORM_ERROR_DOMAIN = "compute.better-compute.dev";

/** PLATFORM_ERROR_CODES lists every reason the platform sends (errors.proto, without the prefix). */
export const PLATFORM_ERROR_CODES = [
  "INVALID_INPUT",
  "NOT_FOUND",
  "ACCESS_DENIED",
  "QUOTA_EXCEEDED",
  "INVALID_STATE",
  "UNAUTHENTICATED",
  "INTERNAL",
  "UNAVAILABLE",
] as const;

/** PlatformErrorCode is one of the platform's error reasons. */
export type PlatformErrorCode = (typeof PLATFORM_ERROR_CODES)[number];

// When a response carries no platform ErrorInfo (a proxy answered, or the network failed), the
// transport code still says roughly what happened; this mirrors the server's reason-to-code table.
const reasonByCode: Partial<Record<Code, PlatformErrorCode>> = {
  [Code.InvalidArgument]: "INVALID_INPUT",
  [Code.OutOfRange]: "INVALID_INPUT",
  [Code.NotFound]: "NOT_FOUND",
  [Code.PermissionDenied]: "ACCESS_DENIED",
  // Our QUOTA_EXCEEDED always carries ErrorInfo; a bare resource_exhausted is the transport's
  // message-size limit: the request was too large.
  [Code.ResourceExhausted]: "INVALID_INPUT",
  [Code.FailedPrecondition]: "INVALID_STATE",
  [Code.Unauthenticated]: "UNAUTHENTICATED",
  [Code.Unavailable]: "UNAVAILABLE",
};

/** PlatformErrorOptions carries what a PlatformError keeps besides its code and message. */
export interface PlatformErrorOptions {
  /** The Connect/gRPC status the call ended with. */
  connectCode?: Code;
  /** ErrorInfo metadata: "field", "stateReason" and any others the server sends. */
  info?: Record<string, string>;
  /** The error this one was read from (normally a ConnectError). */
  cause?: unknown;
}

/**
 * PlatformError is a failed platform call. `code` is the platform reason; the ConnectError it was
 * read from stays reachable as `cause` (with its headers, trailers and raw details).
 */
export class PlatformError extends Error {
  /** The platform reason, e.g. "INVALID_INPUT". */
  readonly code: PlatformErrorCode;
  /** For INVALID_STATE: why the state forbids the call (e.g. "inUse"). */
  readonly stateReason: string | undefined;
  /** For INVALID_INPUT: the first offending field (e.g. "name"). */
  readonly field: string | undefined;
  /** The Connect/gRPC status the call ended with (Code.Unknown when none was received). */
  readonly connectCode: Code;
  /** Every ErrorInfo metadata entry, for facts a newer server may add. */
  readonly info: Readonly<Record<string, string>>;

  /** Builds a PlatformError; toPlatformError reads one from a ConnectError. */
  constructor(code: PlatformErrorCode, message: string, options: PlatformErrorOptions = {}) {
    super(`[${code}] ${message}`, { cause: options.cause });
    // Keeps instanceof working when the SDK is compiled to an older target or bundled twice.
    Object.setPrototypeOf(this, new.target.prototype);
    this.name = "PlatformError";
    this.code = code;
    this.connectCode = options.connectCode ?? Code.Unknown;
    this.info = Object.freeze({ ...(options.info ?? {}) });
    this.field = this.info["field"] || undefined;
    this.stateReason = this.info["stateReason"] || undefined;
  }
}

/** isPlatformError tells whether err is a PlatformError, optionally of the given code. */
export function isPlatformError(err: unknown, code?: PlatformErrorCode): err is PlatformError {
  return err instanceof PlatformError && (code === undefined || err.code === code);
}

function isPlatformErrorCode(value: string): value is PlatformErrorCode {
  return (PLATFORM_ERROR_CODES as readonly string[]).includes(value);
}

/**
 * toPlatformError reads the platform reason of a failed call. It returns err unchanged when it is
 * already a PlatformError, and undefined for what is not a platform failure: a call the caller
 * cancelled or whose deadline passed, or an error that is not a ConnectError at all.
 */
export function toPlatformError(err: unknown): PlatformError | undefined {
  if (err instanceof PlatformError) {
    return err;
  }
  if (!(err instanceof ConnectError)) {
    return undefined;
  }
  const info = err.findDetails(ErrorInfoSchema).find((d) => d.domain === PLATFORM_ERROR_DOMAIN);
  if (info !== undefined && isPlatformErrorCode(info.reason)) {
    return new PlatformError(info.reason, err.rawMessage, {
      connectCode: err.code,
      info: info.metadata,
      cause: err,
    });
  }
  if (err.code === Code.Canceled || err.code === Code.DeadlineExceeded) {
    return undefined;
  }
  return new PlatformError(reasonByCode[err.code] ?? "INTERNAL", err.rawMessage, {
    connectCode: err.code,
    cause: err,
  });
}
