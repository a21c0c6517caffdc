import type { Template } from '../../tools/local/template';

/** `template` without what every build changes: the functions' code location and the versions named by its hash. */
export function withoutBuild(template: Template): unknown {
  const versions = new Set(
    Object.entries(template.Resources)
      .filter(([, resource]) => resource.Type === 'AWS::Lambda::Version')
      .map(([id]) => id),
  );
  const Resources = Object.fromEntries(
    Object.entries(template.Resources)
      .filter(([id]) => !versions.has(id))
      .map(([id, resource]) => {
        if (resource.Type !== 'AWS::Lambda::Function') return [id, resource];
        const properties = { ...(resource.Properties as Record<string, unknown>) };
        delete properties.Code;
        return [id, { ...resource, Properties: properties }];
      }),
  );
  const Outputs = JSON.parse(
    JSON.stringify(template.Outputs ?? {}, (_key, value: unknown) =>
      typeof value === 'string' && versions.has(value) ? value.replace(/LambdaVersion\w+$/, 'LambdaVersion') : value,
    ),
  ) as unknown;
  return { ...template, Resources, Outputs };
}
