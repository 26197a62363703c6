import { assertOperationShape, type Operation } from './operation.js';

/** The operations a server offers. Registration problems throw at startup. */
export class Registry {
  private readonly operations = new Map<string, Operation>();

  register(...operations: Operation[]): this {
    for (const op of operations) {
      assertOperationShape(op);
      if (this.operations.has(op.name)) {
        throw new Error(`operation "${op.name}" is registered twice; operation names must be unique`);
      }
      this.operations.set(op.name, op);
    }
    return this;
  }

  /** spec/PROTOCOL.md §4.1 (REQ-3): one leading slash is accepted and stripped. */
  lookup(operationId: string): Operation | undefined {
    return this.operations.get(operationId.startsWith('/') ? operationId.slice(1) : operationId);
  }

  /** spec/PROTOCOL.md §4.1 (REQ-2): what the wire may call; an internal operation is as missing as one never registered. */
  visible(operationId: string): Operation | undefined {
    const op = this.lookup(operationId);
    return op?.visibility === 'internal' ? undefined : op;
  }

  list(): Operation[] {
    return [...this.operations.values()];
  }
}
