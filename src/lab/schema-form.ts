/**
 * An input editor generated from an operation's JSON Schema (draft 2020-12, as
 * services/schema gives it): a field per property for the shapes a person types
 * (text, numbers, booleans, choices, lists of words), a JSON box for the rest, each
 * with its own validation message; and the whole value as raw JSON. One value is
 * the truth; both views read and write it.
 */
export interface JsonSchema {
  type?: string | string[];
  properties?: Record<string, JsonSchema>;
  required?: string[];
  items?: JsonSchema;
  enum?: unknown[];
  const?: unknown;
  default?: unknown;
  description?: string;
  minLength?: number;
  minItems?: number;
  minimum?: number;
  maximum?: number;
  anyOf?: JsonSchema[];
}

type Kind = 'text' | 'number' | 'boolean' | 'choice' | 'words' | 'json';

interface Field {
  readonly name: string;
  readonly kind: Kind;
  readonly schema: JsonSchema;
  readonly required: boolean;
  readonly control: HTMLInputElement | HTMLSelectElement | HTMLTextAreaElement;
  readonly message: HTMLElement;
}

/**
 * The object whose properties become fields: the input schema itself, or the object
 * of an input that may also be null (zod's `.nullable()`: `anyOf` the object and
 * null). Undefined when the input is no object.
 */
export function objectOf(schema: JsonSchema): JsonSchema | undefined {
  if (schema.type === 'object' || schema.properties) return schema;
  const objects = (schema.anyOf ?? []).filter((s) => s.type === 'object' || s.properties);
  const rest = (schema.anyOf ?? []).filter((s) => !objects.includes(s));
  return objects.length === 1 && rest.every((s) => s.type === 'null') ? objects[0] : undefined;
}

export class SchemaForm {
  private fields: Field[] = [];
  private readonly object: JsonSchema | undefined;

  constructor(
    private readonly form: HTMLFormElement,
    private readonly schema: JsonSchema,
    private readonly onEdit: () => void,
  ) {
    this.object = objectOf(schema);
  }

  /** Builds the fields and fills them with `value`. */
  render(value: Record<string, unknown>): void {
    this.form.replaceChildren();
    this.fields = [];
    if (this.schema.type === 'null') {
      const none = document.createElement('p');
      none.className = 'meta';
      none.textContent = 'This operation takes no input: press Run.';
      this.form.append(none);
    }
    const required = new Set(this.object?.required ?? []);
    for (const [name, schema] of Object.entries(this.object?.properties ?? {})) {
      const kind = kindOf(schema);
      const wrap = document.createElement('div');
      wrap.className = 'field';
      const label = document.createElement('label');
      label.htmlFor = `field-${name}`;
      label.textContent = name + (required.has(name) ? ' *' : '');
      const hint = document.createElement('span');
      hint.className = 'hint';
      hint.textContent = ` ${hintOf(kind, schema)}`;
      label.append(hint);
      const control = controlFor(kind, schema);
      control.id = `field-${name}`;
      control.name = name;
      control.addEventListener('input', () => this.onEdit());
      control.addEventListener('change', () => this.onEdit());
      const message = document.createElement('p');
      message.className = 'message';
      wrap.append(label, control, message);
      this.form.append(wrap);
      this.fields.push({ name, kind, schema, required: required.has(name), control, message });
    }
    this.fill(value);
  }

  fill(value: Record<string, unknown> | null): void {
    for (const f of this.fields) {
      const v = value?.[f.name];
      if (f.kind === 'boolean') (f.control as HTMLInputElement).checked = v === true;
      else if (f.kind === 'words') f.control.value = Array.isArray(v) ? v.map(String).join('\n') : '';
      else if (f.kind === 'json') f.control.value = v === undefined ? '' : JSON.stringify(v);
      else f.control.value = v === undefined || v === null ? '' : String(v);
    }
  }

  /** The value the fields hold (null for an input that is only null), or the first problem with each field shown beside it. */
  read(): { value: Record<string, unknown> | null } | { error: string } {
    if (this.schema.type === 'null') return { value: null };
    const value: Record<string, unknown> = {};
    let first: string | undefined;
    for (const f of this.fields) {
      const problem = readField(f, value);
      f.message.textContent = problem ?? '';
      first ??= problem === undefined ? undefined : `${f.name}: ${problem}`;
    }
    return first === undefined ? { value } : { error: first };
  }
}

function kindOf(schema: JsonSchema): Kind {
  if (schema.enum) return 'choice';
  if (schema.type === 'string') return 'text';
  if (schema.type === 'integer' || schema.type === 'number') return 'number';
  if (schema.type === 'boolean') return 'boolean';
  if (schema.type === 'array' && schema.items?.type === 'string') return 'words';
  return 'json';
}

function hintOf(kind: Kind, schema: JsonSchema): string {
  const about = schema.description ? ` — ${schema.description}` : '';
  if (kind === 'words') return `(one per line)${about}`;
  if (kind === 'json') return `(JSON)${about}`;
  return about;
}

function controlFor(kind: Kind, schema: JsonSchema): HTMLInputElement | HTMLSelectElement | HTMLTextAreaElement {
  if (kind === 'choice') {
    const select = document.createElement('select');
    select.append(new Option('', ''), ...(schema.enum ?? []).map((v) => new Option(String(v), String(v))));
    return select;
  }
  if (kind === 'words' || kind === 'json') {
    const area = document.createElement('textarea');
    area.spellcheck = false;
    return area;
  }
  const input = document.createElement('input');
  input.type = kind === 'boolean' ? 'checkbox' : kind === 'number' ? 'number' : 'text';
  input.autocomplete = 'off';
  return input;
}

/** Reads one field into `into`; returns what is wrong with it, if anything. */
function readField(f: Field, into: Record<string, unknown>): string | undefined {
  const raw = f.control.value;
  if (f.kind === 'boolean') {
    // Always written: left out, an unticked box would mean the default, which may be true.
    into[f.name] = (f.control as HTMLInputElement).checked;
    return undefined;
  }
  if (raw.trim() === '') return f.required ? 'required' : undefined;
  switch (f.kind) {
    case 'text':
      if (f.schema.minLength !== undefined && raw.length < f.schema.minLength) return `at least ${f.schema.minLength} characters`;
      into[f.name] = raw;
      return undefined;
    case 'choice':
      into[f.name] = raw;
      return undefined;
    case 'number': {
      const n = Number(raw);
      if (!Number.isFinite(n)) return 'a number';
      if (f.schema.type === 'integer' && !Number.isInteger(n)) return 'a whole number';
      if (f.schema.minimum !== undefined && n < f.schema.minimum) return `at least ${f.schema.minimum}`;
      if (f.schema.maximum !== undefined && n > f.schema.maximum) return `at most ${f.schema.maximum}`;
      into[f.name] = n;
      return undefined;
    }
    case 'words': {
      const words = raw.split('\n').filter((w) => w !== '');
      if (f.schema.minItems !== undefined && words.length < f.schema.minItems) return `at least ${f.schema.minItems} line(s)`;
      into[f.name] = words;
      return undefined;
    }
    case 'json':
      try {
        into[f.name] = JSON.parse(raw);
        return undefined;
      } catch (error) {
        return `not JSON: ${(error as Error).message}`;
      }
  }
}
