/**
 * The ONNX model format: the messages of onnx/onnx.proto that FedTensor writes (field names
 * and numbers exactly as there; fields it never sets are left out), encoded by protobufjs.
 */
import protobuf from "protobufjs";

const schema = `
syntax = "proto2";
package onnx;

message AttributeProto {
  enum AttributeType { UNDEFINED = 0; FLOAT = 1; INT = 2; STRING = 3; TENSOR = 4; GRAPH = 5; FLOATS = 6; INTS = 7; }
  optional string name = 1;
  optional AttributeType type = 20;
  optional float f = 2;
  optional int64 i = 3;
  optional bytes s = 4;
  optional TensorProto t = 5;
  optional GraphProto g = 6;
  repeated float floats = 7;
  repeated int64 ints = 8;
}
message ValueInfoProto {
  optional string name = 1;
  optional TypeProto type = 2;
}
message NodeProto {
  repeated string input = 1;
  repeated string output = 2;
  optional string name = 3;
  optional string op_type = 4;
  repeated AttributeProto attribute = 5;
}
message ModelProto {
  optional int64 ir_version = 1;
  repeated OperatorSetIdProto opset_import = 8;
  optional string producer_name = 2;
  optional GraphProto graph = 7;
}
message GraphProto {
  repeated NodeProto node = 1;
  optional string name = 2;
  repeated TensorProto initializer = 5;
  repeated ValueInfoProto input = 11;
  repeated ValueInfoProto output = 12;
}
message TensorProto {
  repeated int64 dims = 1;
  optional int32 data_type = 2;
  optional string name = 8;
  optional bytes raw_data = 9;
}
message TensorShapeProto {
  message Dimension {
    oneof value {
      int64 dim_value = 1;
      string dim_param = 2;
    }
  }
  repeated Dimension dim = 1;
}
message TypeProto {
  message Tensor {
    optional int32 elem_type = 1;
    optional TensorShapeProto shape = 2;
  }
  oneof value {
    Tensor tensor_type = 1;
  }
}
message OperatorSetIdProto {
  optional string domain = 1;
  optional int64 version = 2;
}
`;

/** TensorProto.DataType values of the element types FedTensor uses. */
export const DataType = { FLOAT: 1, INT32: 6, INT64: 7, BOOL: 9, UINT32: 12 } as const;
export type DataTypeCode = (typeof DataType)[keyof typeof DataType];

/** AttributeProto.AttributeType values. */
export const AttributeType = { FLOAT: 1, INT: 2, STRING: 3, TENSOR: 4, GRAPH: 5, FLOATS: 6, INTS: 7 } as const;

export interface TensorProto {
  name: string;
  dims: number[];
  data_type: DataTypeCode;
  raw_data: Uint8Array;
}

export interface AttributeProto {
  name: string;
  type: (typeof AttributeType)[keyof typeof AttributeType];
  f?: number;
  i?: number;
  s?: Uint8Array;
  t?: TensorProto;
  g?: GraphProto;
  floats?: number[];
  ints?: number[];
}

export interface ValueInfoProto {
  name: string;
  type: { tensor_type: { elem_type: DataTypeCode; shape: { dim: ({ dim_value: number } | { dim_param: string })[] } } };
}

export interface NodeProto {
  input: string[];
  output: string[];
  op_type: string;
  attribute: AttributeProto[];
}

export interface GraphProto {
  name: string;
  node: NodeProto[];
  initializer: TensorProto[];
  input: ValueInfoProto[];
  output: ValueInfoProto[];
}

export interface ModelProto {
  ir_version: number;
  opset_import: { domain: string; version: number }[];
  producer_name: string;
  graph: GraphProto;
}

const modelType = protobuf.parse(schema, { keepCase: true }).root.lookupType("onnx.ModelProto");

/** The model's bytes, as onnxruntime loads them. */
export function encodeModel(model: ModelProto): Uint8Array {
  return modelType.encode(modelType.fromObject(model as unknown as Record<string, unknown>)).finish();
}
