// The platform's typed error: every failed call surfaces as a PlatformError carrying the reason the
// server put in google.rpc.ErrorInfo, so callers branch on `code` instead of parsing messages.

import { Code, ConnectError } from "@connectrpc/connect";
import { ErrorInfoSchema } from "./error-info.js";
import { ViolationsSchema, type Violation as ViolationMessage } from "./gen/buf/validate/validate_pb.js";
import { ErrorReason, ErrorReasonSchema } from "./gen/bettercompute/compute/v1/errors_pb.js";

/** PLATFORM_ERROR_DOMAIN is the ErrorInfo domain of the platform's reasons. */
export const PLATFORM_ERROR_DOMAIN = "compute.better-compute.dev";

/** PlatformErrorCode is one of the platform's error reasons: a name of errors.proto's ErrorReason. */
export type PlatformErrorCode = Exclude<keyof typeof ErrorReason, "UNSPECIFIED">;

/** PLATFORM_ERROR_CODES lists every reason the platform sends, in errors.proto's order. */
export const PLATFORM_ERROR_CODES: readonly PlatformErrorCode[] = Object.freeze(
  ErrorReasonSchema.values
    .filter((v) => v.number !== ErrorReason.UNSPECIFIED)
    .map((v) => v.localName as PlatformErrorCode),
);

/** REQUEST_ID_HEADER names the request on every answer of the server. */
export const REQUEST_ID_HEADER = "x-request-id";

// When a response carries no platform ErrorInfo (a proxy answered, or the network failed), the
// transport code still says roughly what happened. This is the SDK's one such table; Canceled and
// DeadlineExceeded are the caller's (see toPlatformError) and never reach it.
const reasonByCode: Partial<Record<Code, PlatformErrorCode>> = {
  [Code.InvalidArgument]: "INVALID_INPUT",
  [Code.OutOfRange]: "INVALID_INPUT",
  [Code.Unimplemented]: "INVALID_INPUT",
  [Code.NotFound]: "NOT_FOUND",
  [Code.PermissionDenied]: "ACCESS_DENIED",
  // Our QUOTA_EXCEEDED always carries ErrorInfo; a bare resource_exhausted is the transport's
  // message-size limit: the request was too large.
  [Code.ResourceExhausted]: "INVALID_INPUT",
  [Code.FailedPrecondition]: "INVALID_STATE",
  [Code.Unauthenticated]: "UNAUTHENTICATED",
  [Code.Unavailable]: "UNAVAILABLE",
  [Code.Aborted]: "UNAVAILABLE",
};

/** Violation is one rule an INVALID_INPUT request broke. */
export interface Violation {
  /** The field in JSON names, e.g. "forwarding[0].entryPort" (as PlatformError.field names it). */
  readonly field: string;
  /** The rule's id, e.g. "string.pattern". */
  readonly rule: string;
  /** What is wrong, for people. */
  readonly message: string;
}

/** PlatformErrorOptions carries what a PlatformError keeps besides its code and message. */
export interface PlatformErrorOptions {
  /** The Connect/gRPC status the call ended with. */
  connectCode?: Code;
  /** ErrorInfo metadata: "field", "stateReason" and any others the server sends. */
  info?: Record<string, string>;
  /** The error this one was read from (normally a ConnectError). */
  cause?: unknown;
  /** Every violation of an INVALID_INPUT answer. */
  violations?: readonly Violation[];
  /** The server's id of the request (ErrorInfo "requestId", else the X-Request-Id header). */
  requestId?: string;
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
  /** For INVALID_INPUT: every rule the request broke, in the server's order (field is the first's). */
  readonly violations: readonly Violation[];
  /** The server's id of the request, to quote when reporting a problem (undefined: no answer came). */
  readonly requestId: string | undefined;
  /** Whether the same call may succeed later (UNAVAILABLE). */
  get temporary(): boolean {
    return this.code === "UNAVAILABLE";
  }

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
    this.violations = Object.freeze([...(options.violations ?? [])]);
    this.requestId = this.info["requestId"] || options.requestId || undefined;
  }
}

/** isPlatformError tells whether err is a PlatformError, optionally of the given code. */
export function isPlatformError(err: unknown, code?: PlatformErrorCode): err is PlatformError {
  return err instanceof PlatformError && (code === undefined || err.code === code);
}

function isPlatformErrorCode(value: string): value is PlatformErrorCode {
  return (PLATFORM_ERROR_CODES as readonly string[]).includes(value);
}

/** violationField renders a violation's field path in JSON names, as the server names the field. */
export function violationField(v: ViolationMessage): string {
  const parts: string[] = [];
  for (const el of v.field?.elements ?? []) {
    let part = el.fieldName.replace(/_([a-z])/g, (_, c: string) => c.toUpperCase());
    const sub = el.subscript;
    if (sub.case === "stringKey") part += `[${JSON.stringify(sub.value)}]`;
    else if (sub.case !== undefined) part += `[${String(sub.value)}]`;
    parts.push(part);
  }
  if (parts.length > 0) return parts.join(".");
  // A message-level rule has no path: its id starts with the field it is about.
  const dot = v.ruleId.indexOf(".");
  return dot > 0 ? v.ruleId.slice(0, dot) : v.ruleId;
}

/**
 * toPlatformError reads the platform reason of a failed call. It returns err unchanged when it is
 * already a PlatformError, and undefined for what is not a platform failure: a call the caller
 * cancelled (an abort stays the ConnectError with Code.Canceled) or whose deadline passed
 * (Code.DeadlineExceeded), or an error that is not a ConnectError at all.
 */
export function toPlatformError(err: unknown): PlatformError | undefined {
  if (err instanceof PlatformError) {
    return err;
  }
  if (!(err instanceof ConnectError)) {
    return undefined;
  }
  const violations = err
    .findDetails(ViolationsSchema)
    .flatMap((vs) => vs.violations.map((v) => ({ field: violationField(v), rule: v.ruleId, message: v.message })));
  const requestId = err.metadata.get(REQUEST_ID_HEADER) ?? undefined;
  const common = { connectCode: err.code, cause: err, violations, ...(requestId ? { requestId } : {}) };
  const info = err.findDetails(ErrorInfoSchema).find((d) => d.domain === PLATFORM_ERROR_DOMAIN);
  if (info !== undefined && isPlatformErrorCode(info.reason)) {
    return new PlatformError(info.reason, err.rawMessage, { ...common, info: info.metadata });
  }
  if (err.code === Code.Canceled || err.code === Code.DeadlineExceeded) {
    return undefined;
  }
  return new PlatformError(reasonByCode[err.code] ?? "INTERNAL", err.rawMessage, common);
}

/**
 * unreachable turns a fetch that failed without an answer (refused, reset, DNS, TLS) into a
 * ConnectError with Code.Unavailable; an aborted fetch is rethrown as it is, so an abort stays an
 * abort. The SDK wraps the fetch of every transport it builds with this.
 */
export function unreachable(fetchFn: typeof globalThis.fetch): typeof globalThis.fetch {
  return async (input, init) => {
    try {
      return await fetchFn(input, init);
    } catch (err) {
      if (init?.signal?.aborted || (err instanceof Error && err.name === "AbortError")) throw err;
      const why = err instanceof Error ? err.message : String(err);
      throw new ConnectError(`the platform could not be reached: ${why}`, Code.Unavailable, undefined, undefined, err);
    }
  };
}
