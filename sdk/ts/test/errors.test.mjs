// Unit tests of the SDK's own logic, without a server: reading PlatformError from ConnectError
// details, the fallbacks, and the interceptors over an in-memory Connect router.
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { create, toBinary } from "@bufbuild/protobuf";
import { Code, ConnectError, createRouterTransport } from "@connectrpc/connect";
import {
  clientsFor,
  ErrorInfoSchema,
  LoadBalancerService,
  PLATFORM_ERROR_DOMAIN,
  PlatformError,
  sdkInterceptors,
  services,
  toPlatformError,
} from "../dist/index.js";

/** errorInfo encodes an ErrorInfo detail the way it arrives from the wire. */
function errorInfo(reason, metadata = {}, domain = PLATFORM_ERROR_DOMAIN) {
  return {
    type: "google.rpc.ErrorInfo",
    value: toBinary(ErrorInfoSchema, create(ErrorInfoSchema, { reason, domain, metadata })),
  };
}

describe("toPlatformError", () => {
  const cases = [
    {
      reason: "ErrorInfo reason and field metadata are read",
      err: new ConnectError("bad name", Code.InvalidArgument, undefined, [errorInfo("INVALID_INPUT", { field: "name" })]),
      want: { code: "INVALID_INPUT", field: "name", stateReason: undefined, connectCode: Code.InvalidArgument },
    },
    {
      reason: "stateReason metadata is read",
      err: new ConnectError("in use", Code.FailedPrecondition, undefined, [
        errorInfo("INVALID_STATE", { stateReason: "inUse" }),
      ]),
      want: { code: "INVALID_STATE", field: undefined, stateReason: "inUse", connectCode: Code.FailedPrecondition },
    },
    {
      reason: "the ErrorInfo reason wins over the transport code",
      err: new ConnectError("no room", Code.FailedPrecondition, undefined, [errorInfo("QUOTA_EXCEEDED")]),
      want: { code: "QUOTA_EXCEEDED", field: undefined, stateReason: undefined, connectCode: Code.FailedPrecondition },
    },
    {
      reason: "an ErrorInfo of another domain is ignored in favour of the code",
      err: new ConnectError("nope", Code.PermissionDenied, undefined, [errorInfo("SOMETHING", {}, "example.com")]),
      want: { code: "ACCESS_DENIED", field: undefined, stateReason: undefined, connectCode: Code.PermissionDenied },
    },
    {
      reason: "an unknown reason falls back to the transport code",
      err: new ConnectError("huh", Code.NotFound, undefined, [errorInfo("NOT_A_REASON")]),
      want: { code: "NOT_FOUND", field: undefined, stateReason: undefined, connectCode: Code.NotFound },
    },
    {
      reason: "no detail and an unmapped code is INTERNAL",
      err: new ConnectError("boom", Code.Internal),
      want: { code: "INTERNAL", field: undefined, stateReason: undefined, connectCode: Code.Internal },
    },
    {
      reason: "no detail and unavailable is UNAVAILABLE",
      err: new ConnectError("down", Code.Unavailable),
      want: { code: "UNAVAILABLE", field: undefined, stateReason: undefined, connectCode: Code.Unavailable },
    },
  ];
  for (const c of cases) {
    test(c.reason, () => {
      const got = toPlatformError(c.err);
      assert.ok(got instanceof PlatformError);
      assert.ok(got instanceof Error);
      assert.deepEqual(
        { code: got.code, field: got.field, stateReason: got.stateReason, connectCode: got.connectCode },
        c.want,
      );
      assert.equal(got.cause, c.err);
      assert.match(got.message, new RegExp(`^\\[${c.want.code}\\] `));
    });
  }

  const notPlatform = [
    { reason: "a cancelled call is the caller's doing", err: new ConnectError("stop", Code.Canceled) },
    { reason: "a passed deadline is the caller's doing", err: new ConnectError("late", Code.DeadlineExceeded) },
    { reason: "a plain Error is not a call failure", err: new TypeError("bug") },
    { reason: "a non-error value", err: "string" },
  ];
  for (const c of notPlatform) {
    test(`${c.reason}: undefined`, () => {
      assert.equal(toPlatformError(c.err), undefined);
    });
  }

  test("a PlatformError is returned as it is", () => {
    const err = new PlatformError("NOT_FOUND", "gone");
    assert.equal(toPlatformError(err), err);
  });
});

describe("interceptors", () => {
  // An in-memory router: the server side of these tests, to see what the client sends and what it
  // makes of what comes back.
  function transport(token) {
    const seen = [];
    const t = createRouterTransport(
      ({ service }) => {
        service(LoadBalancerService, {
          getLoadBalancer(req, ctx) {
            seen.push(ctx.requestHeader.get("authorization"));
            if (req.loadBalancerId === "missing") {
              throw new ConnectError("not found", Code.NotFound, undefined, [errorInfo("NOT_FOUND")]);
            }
            return { loadBalancer: { id: req.loadBalancerId, tenantId: req.tenantId } };
          },
        });
      },
      { transport: { interceptors: sdkInterceptors(token) } },
    );
    return { seen, client: clientsFor(t) };
  }

  test("the bearer token is sent", async () => {
    const { seen, client } = transport("secret-1");
    const res = await client.loadBalancers.getLoadBalancer({ tenantId: "t1", loadBalancerId: "plb_x" });
    assert.equal(res.loadBalancer?.id, "plb_x");
    assert.deepEqual(seen, ["Bearer secret-1"]);
  });

  test("a token function is asked on every call", async () => {
    let n = 0;
    const { seen, client } = transport(async () => `rotated-${++n}`);
    await client.loadBalancers.getLoadBalancer({ tenantId: "t1", loadBalancerId: "plb_x" });
    await client.loadBalancers.getLoadBalancer({ tenantId: "t1", loadBalancerId: "plb_x" });
    assert.deepEqual(seen, ["Bearer rotated-1", "Bearer rotated-2"]);
  });

  test("a failed call rejects with a PlatformError", async () => {
    const { client } = transport("secret-1");
    await assert.rejects(client.loadBalancers.getLoadBalancer({ tenantId: "t1", loadBalancerId: "missing" }), (err) => {
      assert.ok(err instanceof PlatformError);
      assert.equal(err.code, "NOT_FOUND");
      return true;
    });
  });

  test("every service of the SDK has a client with every method", () => {
    const { client } = transport("x");
    assert.deepEqual(Object.keys(client).sort(), Object.keys(services).sort());
    for (const [name, service] of Object.entries(services)) {
      assert.deepEqual(
        Object.keys(client[name]).sort(),
        service.methods.map((m) => m.localName).sort(),
        `${name} (${service.typeName})`,
      );
    }
    // The services the platform had when the SDK was written; more may follow.
    const known = ["loadBalancers", "tenants", "projects", "providerAccounts", "pools", "networks"];
    known.push("certificates", "instances", "events", "usage", "metal");
    for (const name of known) {
      assert.ok(name in client, name);
    }
  });
});

describe("violations, request ids and transport failures", () => {
  test("every violation is listed, and the request id is read from ErrorInfo or the header", async () => {
    const { ViolationsSchema, createComputeClient, isPlatformError } = await import("../dist/index.js");
    const violations = {
      type: "buf.validate.Violations",
      value: toBinary(
        ViolationsSchema,
        create(ViolationsSchema, {
          violations: [
            { field: { elements: [{ fieldName: "name" }] }, ruleId: "string.pattern", message: "bad name" },
            {
              field: {
                elements: [
                  { fieldName: "forwarding", subscript: { case: "index", value: 0n } },
                  { fieldName: "entry_port" },
                ],
              },
              ruleId: "int32.gte",
              message: "too small",
            },
            { ruleId: "targets.exactly_one", message: "one kind" },
          ],
        }),
      ),
    };
    const err = new ConnectError("bad", Code.InvalidArgument, { "X-Request-Id": "req-h" }, [
      errorInfo("INVALID_INPUT", { field: "name" }),
      violations,
    ]);
    const got = toPlatformError(err);
    assert.deepEqual(got.violations, [
      { field: "name", rule: "string.pattern", message: "bad name" },
      { field: "forwarding[0].entryPort", rule: "int32.gte", message: "too small" },
      { field: "targets", rule: "targets.exactly_one", message: "one kind" },
    ]);
    assert.equal(got.requestId, "req-h");
    const fromInfo = toPlatformError(
      new ConnectError("x", Code.NotFound, { "X-Request-Id": "req-h" }, [errorInfo("NOT_FOUND", { requestId: "req-i" })]),
    );
    assert.equal(fromInfo.requestId, "req-i");
    assert.equal(toPlatformError(new ConnectError("down", Code.Unavailable)).temporary, true);
    void createComputeClient;
    void isPlatformError;
  });

  test("a refused connection is UNAVAILABLE over fetch; an abort stays an abort", async () => {
    const { createServer } = await import("node:net");
    const srv = createServer();
    await new Promise((res) => srv.listen(0, "127.0.0.1", res));
    const { port } = srv.address();
    await new Promise((res) => srv.close(res));
    const { createComputeClient } = await import("../dist/index.js");
    const client = createComputeClient({ baseUrl: `http://127.0.0.1:${port}`, token: "t" });
    await assert.rejects(client.tenants.getTenant({ tenantId: "x" }), (err) => {
      assert.ok(err instanceof PlatformError, String(err));
      assert.equal(err.code, "UNAVAILABLE");
      assert.equal(err.requestId, undefined);
      return true;
    });
    const ac = new AbortController();
    ac.abort();
    await assert.rejects(client.tenants.getTenant({ tenantId: "x" }, { signal: ac.signal }), (err) => {
      assert.ok(!(err instanceof PlatformError), String(err));
      assert.ok(err instanceof ConnectError);
      assert.equal(err.code, Code.Canceled);
      return true;
    });
  });
});

describe("the error vocabulary", () => {
  test("PLATFORM_ERROR_CODES are errors.proto's reasons, and each is read from ErrorInfo", async () => {
    const { readFile } = await import("node:fs/promises");
    const { PLATFORM_ERROR_CODES } = await import("../dist/index.js");
    const proto = await readFile(new URL("../../../proto/bettercompute/compute/v1/errors.proto", import.meta.url), "utf8");
    const reasons = [...proto.matchAll(/^\s*ERROR_REASON_(\w+)\s*=\s*\d+;/gm)].map((m) => m[1]).filter((r) => r !== "UNSPECIFIED");
    assert.ok(reasons.length >= 8, `read ${reasons} from errors.proto`);
    assert.deepEqual([...PLATFORM_ERROR_CODES], reasons);
    for (const reason of reasons) {
      const err = new ConnectError("x", Code.Unknown, undefined, [errorInfo(reason)]);
      assert.equal(toPlatformError(err)?.code, reason);
    }
  });
});
