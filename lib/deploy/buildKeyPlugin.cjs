'use strict';

/**
 * osls plugin: lets serverless.yml carry Serverless Framework v4's top-level `build` key.
 *
 * v4 bundles TypeScript with its own esbuild unless `build.esbuild` is `false`; serverless.yml sets it to `false`
 * so that serverless-esbuild (`custom.esbuild`) builds under v4 as it does under osls. osls validates serverless.yml
 * against its schema and refuses a top-level key it does not know ("unrecognized property 'build'"), so this plugin
 * declares the key, and only the one value that means something here: `{ esbuild: false }`. Under v4, which defines
 * `build` itself, it declares nothing.
 */
class BuildKeyPlugin {
  /**
   * @param {{ configSchemaHandler?: { schema?: { properties?: Record<string, unknown> }, defineTopLevelProperty(name: string, schema: object): void } }} serverless
   *   the framework instance; a framework without a schema of top-level keys, or whose schema has `build`, is left alone.
   */
  constructor(serverless) {
    const schemas = serverless.configSchemaHandler;
    const properties = schemas && schemas.schema && schemas.schema.properties;
    if (properties === undefined || properties.build !== undefined) return;
    schemas.defineTopLevelProperty('build', {
      type: 'object',
      properties: { esbuild: { const: false } },
      required: ['esbuild'],
      additionalProperties: false,
    });
  }
}

module.exports = BuildKeyPlugin;
