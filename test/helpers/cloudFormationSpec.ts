import { loadAwsServiceSpec } from '@aws-cdk/aws-service-spec';
import type { PropertyType, ResourceProperties, SpecDatabase } from '@aws-cdk/service-spec-types';
import type { Template } from '../../tools/local/template';

/** Keys a template resource may have besides `Type` and `Properties`. */
const RESOURCE_KEYS = new Set([
  'Type',
  'Properties',
  'DependsOn',
  'Condition',
  'DeletionPolicy',
  'UpdateReplacePolicy',
  'UpdatePolicy',
  'CreationPolicy',
  'Metadata',
]);

/** True for `{ Ref }` and `{ Fn::… }`: values CloudFormation computes, whose shape is only known at deploy time. */
export function isIntrinsic(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const keys = Object.keys(value);
  return keys.length === 1 && (keys[0] === 'Ref' || keys[0]!.startsWith('Fn::'));
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * Checks templates against the AWS service specification of `@aws-cdk/aws-service-spec` (the CloudFormation
 * resource schemas, as a database shipped in the package and loaded in about a second).
 */
export class CloudFormationSpec {
  private constructor(private readonly db: SpecDatabase) {}

  /** Loads the database bundled with `@aws-cdk/aws-service-spec`. */
  static async load(): Promise<CloudFormationSpec> {
    return new CloudFormationSpec(await loadAwsServiceSpec());
  }

  /**
   * Every way in which `template` departs from the specification, as readable lines (empty when it conforms):
   * an unknown resource type, an unknown or missing required property, an unknown key in a nested property
   * (followed through the spec's type definitions), a value of the wrong kind, or a `Fn::GetAtt` of an
   * attribute the target's type does not have. Intrinsic values are not looked into.
   */
  problems(template: Template): string[] {
    const problems: string[] = [];
    for (const [id, resource] of Object.entries(template.Resources)) {
      const spec = this.db.lookup('resource', 'cloudFormationType', 'equals', resource.Type);
      if (spec.length !== 1) {
        problems.push(`${id}: unknown resource type ${resource.Type}`);
        continue;
      }
      for (const key of Object.keys(resource))
        if (!RESOURCE_KEYS.has(key)) problems.push(`${id}: unknown resource key ${key}`);
      const properties = spec.only().properties;
      for (const [name, property] of Object.entries(properties)) {
        if (property.required === true && resource.Properties?.[name] === undefined)
          problems.push(`${id}: missing required property ${name}`);
      }
      this.checkObject(resource.Properties ?? {}, properties, `${id}.Properties`, problems);
    }
    for (const [id, target, attribute] of getAtts(template)) {
      const type = template.Resources[target]?.Type;
      if (type === undefined) continue;
      const spec = this.db.lookup('resource', 'cloudFormationType', 'equals', type);
      if (spec.length === 1 && !(attribute in spec.only().attributes))
        problems.push(`${id}: Fn::GetAtt ${target}.${attribute}: ${type} has no attribute ${attribute}`);
    }
    return problems;
  }

  private checkObject(
    value: Record<string, unknown>,
    properties: ResourceProperties,
    at: string,
    problems: string[],
  ): void {
    for (const [key, child] of Object.entries(value)) {
      const property = properties[key];
      if (property === undefined) problems.push(`${at}.${key}: unknown property`);
      else this.checkValue(child, property.type, `${at}.${key}`, problems);
    }
  }

  private checkValue(value: unknown, type: PropertyType, at: string, problems: string[]): void {
    if (isIntrinsic(value)) return;
    switch (type.type) {
      case 'ref': {
        if (!isRecord(value)) {
          problems.push(`${at}: must be an object`);
          return;
        }
        this.checkObject(value, this.db.get('typeDefinition', type.reference).properties, at, problems);
        return;
      }
      case 'array':
        if (!Array.isArray(value)) problems.push(`${at}: must be a list`);
        else value.forEach((element, i) => this.checkValue(element, type.element, `${at}[${i}]`, problems));
        return;
      case 'map':
        if (!isRecord(value)) problems.push(`${at}: must be a map`);
        else
          for (const [key, element] of Object.entries(value))
            this.checkValue(element, type.element, `${at}.${key}`, problems);
        return;
      case 'union': {
        const attempts = type.types.map((member) => {
          const found: string[] = [];
          this.checkValue(value, member, at, found);
          return found;
        });
        if (attempts.every((found) => found.length > 0))
          problems.push(...attempts.reduce((a, b) => (a.length <= b.length ? a : b)));
        return;
      }
      case 'string':
        if (!['string', 'number', 'boolean'].includes(typeof value)) problems.push(`${at}: must be a string`);
        return;
      case 'integer':
      case 'number':
        if (
          typeof value !== 'number' &&
          !(typeof value === 'string' && value.trim() !== '' && Number.isFinite(Number(value)))
        )
          problems.push(`${at}: must be a number`);
        return;
      case 'boolean':
        if (typeof value !== 'boolean' && value !== 'true' && value !== 'false')
          problems.push(`${at}: must be a boolean`);
        return;
      default:
        // json, tag, date-time, null: any shape.
        return;
    }
  }
}

/** Every value inside `value`, depth first (objects and arrays included). */
function* walk(value: unknown): Generator<unknown> {
  yield value;
  if (Array.isArray(value)) for (const element of value) yield* walk(element);
  else if (isRecord(value)) for (const element of Object.values(value)) yield* walk(element);
}

/** Every `Fn::GetAtt` in the resources, as [resource, target, attribute]. */
export function getAtts(template: Template): [string, string, string][] {
  const found: [string, string, string][] = [];
  for (const [id, resource] of Object.entries(template.Resources)) {
    for (const value of walk(resource.Properties)) {
      if (!isRecord(value) || !Array.isArray(value['Fn::GetAtt'])) continue;
      const [target, attribute] = value['Fn::GetAtt'] as [string, string];
      found.push([id, target, attribute]);
    }
  }
  return found;
}

/**
 * The logical ids `value` refers to: `Ref`, `Fn::GetAtt` and `${Name}` / `${Name.Attr}` in `Fn::Sub`, without
 * pseudo parameters (`AWS::…`).
 */
export function references(value: unknown): Set<string> {
  const ids = new Set<string>();
  for (const node of walk(value)) {
    if (!isRecord(node)) continue;
    if (typeof node.Ref === 'string') ids.add(node.Ref);
    if (Array.isArray(node['Fn::GetAtt'])) ids.add(String(node['Fn::GetAtt'][0]));
    const sub = node['Fn::Sub'];
    const text = typeof sub === 'string' ? sub : Array.isArray(sub) && typeof sub[0] === 'string' ? sub[0] : undefined;
    for (const match of text?.matchAll(/\$\{([^!}][^}]*)\}/g) ?? []) ids.add(match[1]!.split('.')[0]!);
  }
  for (const id of ids) if (id.startsWith('AWS::')) ids.delete(id);
  return ids;
}

/**
 * A dependency cycle among the resources (through references and `DependsOn`), which CloudFormation refuses,
 * as the list of logical ids around it; `undefined` when there is none.
 */
export function findCycle(template: Template): string[] | undefined {
  const edges = new Map<string, string[]>();
  for (const [id, resource] of Object.entries(template.Resources)) {
    const dependsOn = resource.DependsOn === undefined ? [] : ([] as string[]).concat(resource.DependsOn);
    edges.set(id, [...references(resource.Properties), ...dependsOn]);
  }
  const state = new Map<string, 'visiting' | 'done'>();
  const stack: string[] = [];
  const visit = (id: string): string[] | undefined => {
    if (state.get(id) === 'done') return undefined;
    if (state.get(id) === 'visiting') return [...stack.slice(stack.indexOf(id)), id];
    state.set(id, 'visiting');
    stack.push(id);
    for (const next of edges.get(id) ?? []) {
      const cycle = visit(next);
      if (cycle !== undefined) return cycle;
    }
    stack.pop();
    state.set(id, 'done');
    return undefined;
  };
  for (const id of edges.keys()) {
    const cycle = visit(id);
    if (cycle !== undefined) return cycle;
  }
  return undefined;
}
