/**
 * A small ONNX model writer: the protobuf wire format of the ModelProto fields that hand-built
 * graphs need (nodes, attributes, initializers with raw data, typed inputs/outputs with symbolic
 * dimensions), plus a {@link GraphBuilder} that names intermediate values. It exists so the bundled
 * tiny world model is generated from TypeScript with nothing downloaded; it is not a general ONNX
 * library (no external data, no subgraphs, no sparse tensors).
 *
 * @example
 * const g = new GraphBuilder();
 * const x = g.input('x', 'float32', ['N', 3]);
 * g.output(g.op('Sigmoid', [x]), 'y', 'float32', ['N', 3]);
 * const bytes = g.toModel();
 */

/** ONNX TensorProto.DataType codes for the dtypes the contract uses. */
export const ONNX_DTYPE = { float32: 1, uint8: 2, int8: 3, int32: 6, int64: 7, bool: 9 } as const;
export type OnnxDType = keyof typeof ONNX_DTYPE;

class ProtoWriter {
  private readonly chunks: number[] = [];

  varint(value: number | bigint): this {
    let v = BigInt.asUintN(64, BigInt(value));
    while (v >= 0x80n) {
      this.chunks.push(Number(v & 0x7fn) | 0x80);
      v >>= 7n;
    }
    this.chunks.push(Number(v));
    return this;
  }

  private tag(field: number, wire: number): this {
    return this.varint((field << 3) | wire);
  }

  int(field: number, value: number | bigint): this {
    return this.tag(field, 0).varint(value);
  }

  bytes(field: number, data: Uint8Array): this {
    this.tag(field, 2).varint(data.length);
    for (const b of data) this.chunks.push(b);
    return this;
  }

  string(field: number, value: string): this {
    return this.bytes(field, new TextEncoder().encode(value));
  }

  message(field: number, build: (w: ProtoWriter) => void): this {
    const inner = new ProtoWriter();
    build(inner);
    return this.bytes(field, inner.finish());
  }

  float(field: number, value: number): this {
    this.tag(field, 5);
    const b = new Uint8Array(4);
    new DataView(b.buffer).setFloat32(0, value, true);
    for (const x of b) this.chunks.push(x);
    return this;
  }

  finish(): Uint8Array {
    return Uint8Array.from(this.chunks);
  }
}

export type AttrValue = number | number[] | string | { floats: number[] } | { float: number } | ConstTensor;

export interface ConstTensor {
  dtype: OnnxDType;
  dims: number[];
  data: Float32Array | Uint8Array | Int32Array | BigInt64Array;
}

interface NodeDef {
  op: string;
  inputs: string[];
  outputs: string[];
  attrs: Record<string, AttrValue>;
}

interface ValueInfo {
  name: string;
  dtype: OnnxDType;
  shape: (number | string)[];
}

function writeTensor(w: ProtoWriter, name: string, t: ConstTensor): void {
  for (const d of t.dims) w.int(1, d);
  w.int(2, ONNX_DTYPE[t.dtype]);
  if (name) w.string(8, name);
  w.bytes(9, new Uint8Array(t.data.buffer, t.data.byteOffset, t.data.byteLength));
}

function writeValueInfo(w: ProtoWriter, v: ValueInfo): void {
  w.string(1, v.name);
  w.message(2, (type) =>
    type.message(1, (tt) => {
      tt.int(1, ONNX_DTYPE[v.dtype]);
      tt.message(2, (shape) => {
        for (const d of v.shape) shape.message(1, (dim) => (typeof d === 'number' ? dim.int(1, d) : dim.string(2, d)));
      });
    }),
  );
}

function writeAttr(w: ProtoWriter, name: string, value: AttrValue): void {
  w.string(1, name);
  if (typeof value === 'number') w.int(3, value).int(20, 2);
  else if (typeof value === 'string') w.string(4, value).int(20, 3);
  else if (Array.isArray(value)) {
    for (const v of value) w.int(8, v);
    w.int(20, 7);
  } else if ('floats' in value) {
    for (const v of value.floats) w.float(7, v);
    w.int(20, 6);
  } else if ('float' in value) w.float(2, value.float).int(20, 1);
  else w.message(5, (t) => writeTensor(t, '', value)).int(20, 4);
}

/**
 * Builds one graph. `op` returns the (generated) name of its first output, so graphs read like
 * expressions; constants are deduplicated initializers.
 */
export class GraphBuilder {
  private readonly nodes: NodeDef[] = [];
  private readonly inits = new Map<string, ConstTensor>();
  private readonly inputs: ValueInfo[] = [];
  private readonly outputs: ValueInfo[] = [];
  private counter = 0;

  input(name: string, dtype: OnnxDType, shape: (number | string)[]): string {
    this.inputs.push({ name, dtype, shape });
    return name;
  }

  /** Marks `value` as a graph output called `name` (an Identity node renames it). */
  output(value: string, name: string, dtype: OnnxDType, shape: (number | string)[]): void {
    this.nodes.push({ op: 'Identity', inputs: [value], outputs: [name], attrs: {} });
    this.outputs.push({ name, dtype, shape });
  }

  op(op: string, inputs: string[], attrs: Record<string, AttrValue> = {}, nOutputs = 1): string {
    return this.opMulti(op, inputs, attrs, nOutputs)[0]!;
  }

  opMulti(op: string, inputs: string[], attrs: Record<string, AttrValue> = {}, nOutputs = 1): string[] {
    const outputs = Array.from({ length: nOutputs }, () => `${op.toLowerCase()}_${this.counter++}`);
    this.nodes.push({ op, inputs, outputs, attrs });
    return outputs;
  }

  /** A float32 constant of the given shape (a scalar when `dims` is []). */
  f32(values: number | number[], dims?: number[]): string {
    const data = Float32Array.from(typeof values === 'number' ? [values] : values);
    return this.constant({ dtype: 'float32', dims: dims ?? (typeof values === 'number' ? [] : [data.length]), data });
  }

  i64(values: number[], dims?: number[]): string {
    return this.constant({ dtype: 'int64', dims: dims ?? [values.length], data: BigInt64Array.from(values.map((v) => BigInt(v))) });
  }

  i32(values: number[], dims?: number[]): string {
    return this.constant({ dtype: 'int32', dims: dims ?? [values.length], data: Int32Array.from(values) });
  }

  private constant(t: ConstTensor): string {
    const key = `${t.dtype}|${t.dims.join(',')}|${Array.from(t.data as ArrayLike<number | bigint>).join(',')}`;
    for (const [name, existing] of this.inits) {
      if ((existing as ConstTensor & { key?: string }).key === key) return name;
    }
    const name = `const_${this.inits.size}`;
    this.inits.set(name, Object.assign({}, t, { key }));
    return name;
  }

  /** Serializes to ONNX bytes (IR version 8, default opset 17). */
  toModel(opts: { producer?: string; graphName?: string; opset?: number } = {}): Uint8Array {
    const w = new ProtoWriter();
    w.int(1, 8);
    w.string(2, opts.producer ?? 'gymwire');
    w.message(7, (g) => {
      for (const n of this.nodes) {
        g.message(1, (node) => {
          for (const i of n.inputs) node.string(1, i);
          for (const o of n.outputs) node.string(2, o);
          node.string(3, n.outputs[0]!);
          node.string(4, n.op);
          for (const [k, v] of Object.entries(n.attrs)) node.message(5, (a) => writeAttr(a, k, v));
        });
      }
      g.string(2, opts.graphName ?? 'graph');
      for (const [name, t] of this.inits) g.message(5, (tw) => writeTensor(tw, name, t));
      for (const v of this.inputs) g.message(11, (vw) => writeValueInfo(vw, v));
      for (const v of this.outputs) g.message(12, (vw) => writeValueInfo(vw, v));
    });
    w.message(8, (o) => o.string(1, '').int(2, opts.opset ?? 17));
    return w.finish();
  }
}
