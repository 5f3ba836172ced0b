// LOAD_BALANCER_PARTS against the generated schema: the parts are exactly
// UpdateLoadBalancerRequest's fields other than the call's own, keyed by their JSON names, so a
// setting added to the proto cannot be missing from maskedUpdate's list or linger after it is gone.
import { test } from "node:test";
import assert from "node:assert/strict";
import { LOAD_BALANCER_PARTS } from "../dist/update.js";
import { UpdateLoadBalancerRequestSchema } from "../dist/gen/bettercompute/compute/v1/load_balancers_pb.js";

// The fields that qualify the call (the server keeps the same list).
const CALL_FIELDS = ["tenant_id", "load_balancer_id", "update_mask", "etag", "validate_only"];

test("LOAD_BALANCER_PARTS are UpdateLoadBalancerRequest's settings", () => {
  const settings = UpdateLoadBalancerRequestSchema.fields.filter((f) => !CALL_FIELDS.includes(f.name));
  const want = Object.fromEntries(settings.map((f) => [f.localName, f.name]));
  assert.deepEqual({ ...LOAD_BALANCER_PARTS }, want);
});
