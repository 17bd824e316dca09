import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/**
 * Reads the committed subset of GitHub's OpenAPI 3.0 description
 * (test/fixtures/github-openapi-subset.json, made by
 * scripts/extract-openapi-subset.mjs) and checks requests and responses against
 * it with a small JSON-schema validator. The validator implements exactly the
 * keywords the subset uses; loading a description that uses any other keyword
 * throws, so a regenerated subset can never be validated half-way.
 */

export const SUBSET_PATH = fileURLToPath(new URL('../fixtures/github-openapi-subset.json', import.meta.url));

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

export interface Schema {
  $ref?: string;
  type?: string | string[];
  nullable?: boolean;
  enum?: Json[];
  properties?: Record<string, Schema>;
  required?: string[];
  additionalProperties?: boolean | Schema;
  maxProperties?: number;
  minProperties?: number;
  items?: Schema;
  minItems?: number;
  maxItems?: number;
  minLength?: number;
  maxLength?: number;
  pattern?: string;
  minimum?: number;
  maximum?: number;
  allOf?: Schema[];
  anyOf?: Schema[];
  oneOf?: Schema[];
}

interface Parameter {
  $ref?: string;
  name: string;
  in: 'path' | 'query' | 'header' | 'cookie';
  required?: boolean;
  schema: Schema;
}

interface MediaType {
  schema?: Schema;
}

interface Response {
  $ref?: string;
  content?: Record<string, MediaType>;
}

interface Operation {
  operationId: string;
  parameters?: Parameter[];
  requestBody?: { required?: boolean; content: Record<string, MediaType> };
  responses: Record<string, Response>;
}

interface Document {
  paths: Record<string, Record<string, Operation | Parameter[]>>;
  components: {
    schemas?: Record<string, Schema>;
    parameters?: Record<string, Parameter>;
    responses?: Record<string, Response>;
  };
}

/** An operation of the description that a request's method and path matched. */
export interface MatchedOperation {
  method: string;
  /** The path template, e.g. `/repos/{owner}/{repo}/issues/{issue_number}/comments`. */
  template: string;
  operationId: string;
  /** Path parameters, percent-decoded. */
  params: Record<string, string>;
}

const VALIDATING_KEYWORDS = new Set([
  '$ref',
  'type',
  'nullable',
  'enum',
  'properties',
  'required',
  'additionalProperties',
  'maxProperties',
  'minProperties',
  'items',
  'minItems',
  'maxItems',
  'minLength',
  'maxLength',
  'pattern',
  'minimum',
  'maximum',
  'allOf',
  'anyOf',
  'oneOf',
]);
/** Keywords that describe but never constrain (format is deliberately not checked). */
const ANNOTATION_KEYWORDS = new Set([
  'title',
  'description',
  'format',
  'default',
  'readOnly',
  'writeOnly',
  'deprecated',
]);

/**
 * GitHub answers these with a basic-error body on any endpoint (bad token, missing
 * permission, unknown resource, rejected values) though few operations list them.
 */
const GENERIC_ERROR_STATUSES = new Set(['401', '403', '404', '422']);

const METHODS = ['get', 'put', 'post', 'delete', 'patch', 'head', 'options'];

export class OpenApiSubset {
  private readonly doc: Document;
  private readonly routes: Array<{
    method: string;
    template: string;
    pattern: RegExp;
    names: string[];
    operation: Operation;
  }>;

  constructor(doc: Document) {
    this.doc = doc;
    this.routes = [];
    for (const [template, item] of Object.entries(doc.paths)) {
      const names: string[] = [];
      const source = template.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\{([^}]+)\}/g, (_match, name: string) => {
        names.push(name);
        return '([^/]+)';
      });
      for (const method of METHODS) {
        const operation = item[method];
        if (operation && !Array.isArray(operation)) {
          this.routes.push({
            method: method.toUpperCase(),
            template,
            pattern: new RegExp(`^${source}$`),
            names,
            operation,
          });
        }
      }
    }
    assertSupportedKeywords(doc);
  }

  static load(path: string = SUBSET_PATH): OpenApiSubset {
    return new OpenApiSubset(JSON.parse(readFileSync(path, 'utf8')) as Document);
  }

  /** The operation a request addresses, or undefined when the description has none for it. */
  match(method: string, pathname: string): MatchedOperation | undefined {
    for (const route of this.routes) {
      if (route.method !== method.toUpperCase()) continue;
      const found = route.pattern.exec(pathname);
      if (!found) continue;
      const params: Record<string, string> = {};
      route.names.forEach((name, index) => {
        params[name] = decodeURIComponent(found[index + 1] ?? '');
      });
      return { method: route.method, template: route.template, operationId: route.operation.operationId, params };
    }
    return undefined;
  }

  /**
   * Problems with a request to a matched operation: path and query parameters,
   * the content type and the JSON body (`undefined` when the request had none).
   */
  validateRequest(
    match: MatchedOperation,
    query: URLSearchParams,
    contentType: string | undefined,
    body: unknown,
  ): string[] {
    const operation = this.operation(match);
    const problems: string[] = [];
    const parameters = (operation.parameters ?? []).map((parameter) => this.resolve<Parameter>(parameter));
    for (const parameter of parameters) {
      if (parameter.in === 'path') {
        const value = match.params[parameter.name];
        if (value === undefined) problems.push(`path parameter ${parameter.name} is missing`);
        else problems.push(...this.checkParameter(parameter, value));
      } else if (parameter.in === 'query') {
        const values = query.getAll(parameter.name);
        if (values.length === 0 && parameter.required) problems.push(`query parameter ${parameter.name} is required`);
        for (const value of values) problems.push(...this.checkParameter(parameter, value));
      }
    }
    const declared = new Set(
      parameters.filter((parameter) => parameter.in === 'query').map((parameter) => parameter.name),
    );
    for (const name of new Set(query.keys())) {
      if (!declared.has(name)) problems.push(`query parameter ${name} is not declared`);
    }

    const requestBody = operation.requestBody;
    if (!requestBody) {
      if (body !== undefined) problems.push('the operation takes no request body, but one was sent');
      return problems;
    }
    if (body === undefined) {
      if (requestBody.required) problems.push('the request body is required');
      return problems;
    }
    const media = requestBody.content['application/json'];
    if (!media || !contentType?.toLowerCase().startsWith('application/json')) {
      problems.push(`request content type ${contentType ?? '(none)'} is not application/json`);
      return problems;
    }
    if (media.schema) problems.push(...this.validate(media.schema, body, 'request body'));
    return problems;
  }

  /** Problems with a response: its status must be declared and its body must match that status's schema. */
  validateResponse(match: MatchedOperation, status: number, body: unknown): string[] {
    const operation = this.operation(match);
    const key = String(status);
    let response = operation.responses[key] ?? operation.responses.default;
    if (!response && GENERIC_ERROR_STATUSES.has(key)) {
      response = { content: { 'application/json': { schema: { $ref: '#/components/schemas/basic-error' } } } };
    }
    if (!response) return [`response status ${status} is not declared for ${match.method} ${match.template}`];
    const schema = this.resolve<Response>(response).content?.['application/json']?.schema;
    if (!schema) return body === undefined ? [] : [`response ${status} must have no body`];
    if (body === undefined) return [`response ${status} must have a JSON body`];
    return this.validate(schema, body, `response ${status} body`);
  }

  /** Validates a value against a schema of this description; returns one line per problem (empty when valid). */
  validate(schema: Schema, value: unknown, at = '$'): string[] {
    const problems: string[] = [];
    this.check(schema, value, at, problems);
    return problems;
  }

  /** A component schema by name (`#/components/schemas/<name>`). */
  schema(name: string): Schema {
    const found = this.doc.components.schemas?.[name];
    if (!found) throw new Error(`no schema ${name} in the OpenAPI subset`);
    return found;
  }

  private operation(match: MatchedOperation): Operation {
    const operation = this.doc.paths[match.template]?.[match.method.toLowerCase()];
    if (!operation || Array.isArray(operation)) throw new Error(`no operation ${match.method} ${match.template}`);
    return operation;
  }

  /** Parameters arrive as text: a value is valid when the text itself or its numeric/boolean reading fits. */
  private checkParameter(parameter: Parameter, raw: string): string[] {
    const at = `${parameter.in} parameter ${parameter.name}`;
    const asText = this.validate(parameter.schema, raw, at);
    if (asText.length === 0) return [];
    const typed = /^-?\d+(\.\d+)?$/.test(raw)
      ? Number(raw)
      : raw === 'true'
        ? true
        : raw === 'false'
          ? false
          : undefined;
    if (typed !== undefined && this.validate(parameter.schema, typed, at).length === 0) return [];
    return asText;
  }

  private resolve<T extends { $ref?: string }>(value: T): T {
    if (value.$ref === undefined) return value;
    const match = /^#\/components\/([^/]+)\/([^/]+)$/.exec(value.$ref);
    const section = match
      ? (this.doc.components as Record<string, Record<string, unknown> | undefined>)[match[1] ?? '']
      : undefined;
    const target = match && section ? section[match[2] ?? ''] : undefined;
    if (target === undefined) throw new Error(`unresolvable $ref ${value.$ref}`);
    return this.resolve(target as T);
  }

  private check(given: Schema, value: unknown, at: string, problems: string[]): void {
    const schema = this.resolve(given);
    if (value === null && schema.nullable === true) return;

    const types = schema.type === undefined ? [] : Array.isArray(schema.type) ? schema.type : [schema.type];
    if (types.length > 0 && !types.some((type) => hasType(value, type))) {
      problems.push(
        `${at}: expected ${types.join(' or ')}${schema.nullable ? ' or null' : ''}, got ${describe(value)}`,
      );
      return;
    }
    if (schema.enum && !schema.enum.some((option) => option === value)) {
      problems.push(`${at}: ${JSON.stringify(value)} is not one of ${JSON.stringify(schema.enum)}`);
    }

    if (isObject(value)) this.checkObject(schema, value, at, problems);
    if (Array.isArray(value)) {
      if (schema.minItems !== undefined && value.length < schema.minItems)
        problems.push(`${at}: fewer than ${schema.minItems} items`);
      if (schema.maxItems !== undefined && value.length > schema.maxItems)
        problems.push(`${at}: more than ${schema.maxItems} items`);
      if (schema.items)
        value.forEach((item, index) => this.check(schema.items as Schema, item, `${at}[${index}]`, problems));
    }
    if (typeof value === 'string') {
      if (schema.minLength !== undefined && value.length < schema.minLength)
        problems.push(`${at}: shorter than ${schema.minLength}`);
      if (schema.maxLength !== undefined && value.length > schema.maxLength)
        problems.push(`${at}: longer than ${schema.maxLength}`);
      if (schema.pattern !== undefined && !new RegExp(schema.pattern, 'u').test(value))
        problems.push(`${at}: does not match ${schema.pattern}`);
    }
    if (typeof value === 'number') {
      if (schema.minimum !== undefined && value < schema.minimum) problems.push(`${at}: below ${schema.minimum}`);
      if (schema.maximum !== undefined && value > schema.maximum) problems.push(`${at}: above ${schema.maximum}`);
    }

    for (const [index, branch] of (schema.allOf ?? []).entries())
      this.check(branch, value, `${at}(allOf ${index})`, problems);
    if (schema.anyOf) {
      const outcomes = schema.anyOf.map((branch) => this.validate(branch, value, at));
      if (!outcomes.some((outcome) => outcome.length === 0)) {
        problems.push(`${at}: matches none of anyOf (closest: ${closest(outcomes)})`);
      }
    }
    if (schema.oneOf) {
      const outcomes = schema.oneOf.map((branch) => this.validate(branch, value, at));
      const matching = outcomes.filter((outcome) => outcome.length === 0).length;
      if (matching === 0) problems.push(`${at}: matches none of oneOf (closest: ${closest(outcomes)})`);
      if (matching > 1) problems.push(`${at}: matches ${matching} branches of oneOf, exactly one allowed`);
    }
  }

  private checkObject(schema: Schema, value: Record<string, unknown>, at: string, problems: string[]): void {
    for (const name of schema.required ?? []) {
      if (value[name] === undefined) problems.push(`${at}.${name}: required property is missing`);
    }
    const keys = Object.keys(value);
    if (schema.maxProperties !== undefined && keys.length > schema.maxProperties)
      problems.push(`${at}: more than ${schema.maxProperties} properties`);
    if (schema.minProperties !== undefined && keys.length < schema.minProperties)
      problems.push(`${at}: fewer than ${schema.minProperties} properties`);
    for (const key of keys) {
      const property = schema.properties?.[key];
      if (property) this.check(property, value[key], `${at}.${key}`, problems);
      else if (schema.additionalProperties === false) problems.push(`${at}.${key}: property is not allowed`);
      else if (typeof schema.additionalProperties === 'object')
        this.check(schema.additionalProperties, value[key], `${at}.${key}`, problems);
    }
  }
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function hasType(value: unknown, type: string): boolean {
  switch (type) {
    case 'null':
      return value === null;
    case 'boolean':
      return typeof value === 'boolean';
    case 'string':
      return typeof value === 'string';
    case 'integer':
      return typeof value === 'number' && Number.isInteger(value);
    case 'number':
      return typeof value === 'number' && Number.isFinite(value);
    case 'array':
      return Array.isArray(value);
    case 'object':
      return isObject(value);
    default:
      throw new Error(`unsupported schema type ${type}`);
  }
}

function describe(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  if (typeof value === 'number' && Number.isInteger(value)) return `integer ${value}`;
  if (typeof value === 'string')
    return `string ${JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value)}`;
  return typeof value;
}

function closest(outcomes: string[][]): string {
  const best = [...outcomes].sort((a, b) => a.length - b.length)[0] ?? [];
  return best.slice(0, 3).join('; ');
}

/** Throws when any schema in the description uses a keyword this validator would silently ignore. */
function assertSupportedKeywords(doc: Document): void {
  const visit = (schema: Schema | undefined, at: string): void => {
    if (!schema) return;
    for (const key of Object.keys(schema)) {
      if (!VALIDATING_KEYWORDS.has(key) && !ANNOTATION_KEYWORDS.has(key) && !key.startsWith('x-')) {
        throw new Error(
          `the OpenAPI subset uses schema keyword "${key}" at ${at}, which the validator does not implement`,
        );
      }
    }
    for (const [name, property] of Object.entries(schema.properties ?? {})) visit(property, `${at}.properties.${name}`);
    visit(schema.items, `${at}.items`);
    if (typeof schema.additionalProperties === 'object')
      visit(schema.additionalProperties, `${at}.additionalProperties`);
    for (const keyword of ['allOf', 'anyOf', 'oneOf'] as const) {
      schema[keyword]?.forEach((branch, index) => visit(branch, `${at}.${keyword}[${index}]`));
    }
  };
  const visitContent = (content: Record<string, MediaType> | undefined, at: string): void => {
    for (const [type, media] of Object.entries(content ?? {})) visit(media.schema, `${at}[${type}]`);
  };
  for (const [name, schema] of Object.entries(doc.components.schemas ?? {}))
    visit(schema, `#/components/schemas/${name}`);
  for (const [name, parameter] of Object.entries(doc.components.parameters ?? {}))
    visit(parameter.schema, `#/components/parameters/${name}`);
  for (const [name, response] of Object.entries(doc.components.responses ?? {}))
    visitContent(response.content, `#/components/responses/${name}`);
  for (const [template, item] of Object.entries(doc.paths)) {
    for (const [method, operation] of Object.entries(item)) {
      if (Array.isArray(operation)) continue;
      const at = `${method.toUpperCase()} ${template}`;
      for (const parameter of operation.parameters ?? [])
        if (!parameter.$ref) visit(parameter.schema, `${at} parameter ${parameter.name}`);
      visitContent(operation.requestBody?.content, `${at} request body`);
      for (const [status, response] of Object.entries(operation.responses))
        visitContent(response.content, `${at} response ${status}`);
    }
  }
}
