// A schema for google.rpc.ErrorInfo, the detail the platform attaches to every failed call.
//
// The SDK describes the message itself with @bufbuild/protobuf's runtime instead of shipping generated
// code for the whole google.rpc package: only these three fields are read, and the wire format is
// all that has to match (type name google.rpc.ErrorInfo; reason = 1, domain = 2, metadata = 3).

import { create, createFileRegistry, type Message } from "@bufbuild/protobuf";
import type { GenMessage } from "@bufbuild/protobuf/codegenv2";
import {
  FieldDescriptorProto_Label,
  FieldDescriptorProto_Type,
  FileDescriptorProtoSchema,
} from "@bufbuild/protobuf/wkt";

/** ErrorInfo is google.rpc.ErrorInfo: why a call failed, as a machine-readable reason. */
export type ErrorInfo = Message<"google.rpc.ErrorInfo"> & {
  /** The platform's reason, e.g. "INVALID_INPUT". */
  reason: string;
  /** Who defined the reason; the platform uses "compute.better-compute.dev". */
  domain: string;
  /** Extra facts, e.g. "field" (the first offending field) or "stateReason" (e.g. "inUse"). */
  metadata: { [key: string]: string };
};

const fileName = "bettercompute/sdk/google_rpc_error_info.proto";

// The descriptor a protobuf compiler would produce for the message; a map field is a repeated
// nested entry message flagged map_entry, which is how descriptors spell map<string, string>.
const fileProto = create(FileDescriptorProtoSchema, {
  name: fileName,
  package: "google.rpc",
  syntax: "proto3",
  messageType: [
    {
      name: "ErrorInfo",
      field: [
        stringField("reason", 1),
        stringField("domain", 2),
        {
          name: "metadata",
          number: 3,
          label: FieldDescriptorProto_Label.REPEATED,
          type: FieldDescriptorProto_Type.MESSAGE,
          typeName: ".google.rpc.ErrorInfo.MetadataEntry",
          jsonName: "metadata",
        },
      ],
      nestedType: [
        {
          name: "MetadataEntry",
          field: [stringField("key", 1), stringField("value", 2)],
          options: { mapEntry: true },
        },
      ],
    },
  ],
});

function stringField(name: string, number: number) {
  return {
    name,
    number,
    label: FieldDescriptorProto_Label.OPTIONAL,
    type: FieldDescriptorProto_Type.STRING,
    jsonName: name,
  };
}

function describe(): GenMessage<ErrorInfo> {
  const desc = createFileRegistry(fileProto, () => undefined).getMessage("google.rpc.ErrorInfo");
  if (desc === undefined) {
    throw new Error("google.rpc.ErrorInfo descriptor did not build");
  }
  // The registry returns an untyped DescMessage; the fields above are exactly those of ErrorInfo.
  return desc as GenMessage<ErrorInfo>;
}

/** ErrorInfoSchema describes google.rpc.ErrorInfo for ConnectError.findDetails and create(). */
export const ErrorInfoSchema: GenMessage<ErrorInfo> = describe();
