/**
 * A minimal ONNX writer: the protobuf wire format of the few ModelProto fields a feed-forward
 * graph needs (nodes with int/float attributes, float32 initializers, float32 inputs/outputs with
 * symbolic batch dimensions). It exists so test models are generated from TypeScript with nothing
 * downloaded; it is not a general ONNX library.
 *
 * @example
 * const g = new OnnxGraph();
 * g.input('obs', ['N', 4]);
 * g.node('Relu', ['obs'], ['y']);
 * g.output('y', ['N', 4]);
 * const bytes = g.toBytes();
 */

const FLOAT = 1; // TensorProto.DataType.FLOAT

class Proto {
  private readonly bytes: number[] = [];

  varint(v: number): this {
    let n = BigInt(v);
    if (n < 0n) n += 1n << 64n;
    while (n >= 0x80n) {
      this.bytes.push(Number((n & 0x7fn) | 0x80n));
      n >>= 7n;
    }
    this.bytes.push(Number(n));
    return this;
  }

  int(field: number, v: number): this {
    return this.varint(field << 3).varint(v);
  }

  raw(field: number, data: Uint8Array): this {
    this.varint((field << 3) | 2).varint(data.length);
    for (const b of data) this.bytes.push(b);
    return this;
  }

  string(field: number, s: string): this {
    return this.raw(field, new TextEncoder().encode(s));
  }

  float(field: number, v: number): this {
    const b = new Uint8Array(4);
    new DataView(b.buffer).setFloat32(0, v, true);
    this.varint((field << 3) | 5);
    for (const x of b) this.bytes.push(x);
    return this;
  }

  message(field: number, build: (p: Proto) => void): this {
    const inner = new Proto();
    build(inner);
    return this.raw(field, inner.finish());
  }

  finish(): Uint8Array {
    return Uint8Array.from(this.bytes);
  }
}

type Dim = number | string;
type Attr = number | { float: number };

export class OnnxGraph {
  private readonly nodes: { op: string; inputs: string[]; outputs: string[]; attrs: Record<string, Attr> }[] = [];
  private readonly inits: { name: string; dims: number[]; data: Float32Array }[] = [];
  private readonly inputs: { name: string; dims: Dim[] }[] = [];
  private readonly outputs: { name: string; dims: Dim[] }[] = [];

  input(name: string, dims: Dim[]): this {
    this.inputs.push({ name, dims });
    return this;
  }

  output(name: string, dims: Dim[]): this {
    this.outputs.push({ name, dims });
    return this;
  }

  /** A float32 weight tensor, row-major. */
  initializer(name: string, dims: number[], data: ArrayLike<number>): this {
    this.inits.push({ name, dims, data: Float32Array.from(data) });
    return this;
  }

  /** Integer attributes are written as INT, `{float}` ones as FLOAT. */
  node(op: string, inputs: string[], outputs: string[], attrs: Record<string, Attr> = {}): this {
    this.nodes.push({ op, inputs, outputs, attrs });
    return this;
  }

  /** ModelProto bytes: IR version 8, default-domain opset 17. */
  toBytes(producer = 'gymwire'): Uint8Array {
    const valueInfo = (p: Proto, v: { name: string; dims: Dim[] }) =>
      p.string(1, v.name).message(2, (type) =>
        type.message(1, (tensor) =>
          tensor.int(1, FLOAT).message(2, (shape) => {
            for (const d of v.dims) shape.message(1, (dim) => (typeof d === 'number' ? dim.int(1, d) : dim.string(2, d)));
          }),
        ),
      );
    return new Proto()
      .int(1, 8)
      .string(2, producer)
      .message(7, (g) => {
        this.nodes.forEach((n, i) =>
          g.message(1, (p) => {
            for (const x of n.inputs) p.string(1, x);
            for (const x of n.outputs) p.string(2, x);
            p.string(3, `${n.op.toLowerCase()}_${i}`).string(4, n.op);
            for (const [name, v] of Object.entries(n.attrs)) {
              p.message(5, (a) => (typeof v === 'number' ? a.string(1, name).int(3, v).int(20, 2) : a.string(1, name).float(2, v.float).int(20, 1)));
            }
          }),
        );
        g.string(2, 'graph');
        for (const t of this.inits) {
          g.message(5, (p) => {
            for (const d of t.dims) p.int(1, d);
            p.int(2, FLOAT).string(8, t.name).raw(9, new Uint8Array(t.data.buffer, t.data.byteOffset, t.data.byteLength));
          });
        }
        for (const v of this.inputs) g.message(11, (p) => valueInfo(p, v));
        for (const v of this.outputs) g.message(12, (p) => valueInfo(p, v));
      })
      .message(8, (o) => o.string(1, '').int(2, 17))
      .finish();
  }
}
