/**
 * Which AWS SDK commands a function's code can send, read from its source: the IAM actions its role must grant.
 *
 * The files are those esbuild bundles for the handler (its metafile's repository inputs), as serverless-esbuild
 * bundles them. A file in the bundle may hold commands the function never sends: the worker bundles `SqsQueues`,
 * `receive` and all, because it calls `send` and `delete`. So the commands are found by reachability over the
 * TypeScript program: from the exported `handler` (and the code every bundled module runs when loaded), each
 * reference to a function, method, class or variable of the repository reaches its code; a reference to a member
 * of an interface or object type (a port) reaches every class member of that name in the bundle. This errs on the
 * side of reaching too much, never too little, except for calls made without naming the callee (`toJSON`,
 * iterators, getters found through a computed key), none of which send commands here.
 */
import path from 'node:path';
import { build } from 'esbuild';
import ts from 'typescript';
import { REPO_ROOT } from '../../tools/local/packageService';
import { tsProject } from '../helpers/tsProject';

/** One `new XxxCommand(…)` of an AWS SDK package, and the IAM action it needs. */
export interface SdkCommand {
  /** The package, e.g. `@aws-sdk/client-sqs`. */
  readonly module: string;
  /** The class, e.g. `SendMessageCommand`. */
  readonly command: string;
  /** The IAM action that authorises it, e.g. `sqs:SendMessage`. */
  readonly action: string;
  /** Where it is constructed, relative to the repository root. */
  readonly file: string;
}

/**
 * The document client's commands: each sends the low-level operation of the DynamoDB action named. Transactions are
 * left out on purpose: their actions depend on the items in them, so a new one must be mapped by hand.
 */
const DOCUMENT_CLIENT_ACTIONS: Readonly<Record<string, string>> = {
  GetCommand: 'dynamodb:GetItem',
  PutCommand: 'dynamodb:PutItem',
  UpdateCommand: 'dynamodb:UpdateItem',
  DeleteCommand: 'dynamodb:DeleteItem',
  QueryCommand: 'dynamodb:Query',
  ScanCommand: 'dynamodb:Scan',
  BatchGetCommand: 'dynamodb:BatchGetItem',
  BatchWriteCommand: 'dynamodb:BatchWriteItem',
};

/** IAM's prefix for each service client the service may use; another client must be added here first. */
const SERVICE_PREFIXES: Readonly<Record<string, string>> = {
  sqs: 'sqs',
  dynamodb: 'dynamodb',
  lambda: 'lambda',
  ssm: 'ssm',
  eventbridge: 'events',
};

/**
 * Operations whose action is not their name: SQS authorises a batch as its single operation, and Lambda's invoke
 * operations are all `lambda:InvokeFunction`.
 */
const RENAMED_ACTIONS: Readonly<Record<string, string>> = {
  'sqs:SendMessageBatch': 'sqs:SendMessage',
  'sqs:DeleteMessageBatch': 'sqs:DeleteMessage',
  'sqs:ChangeMessageVisibilityBatch': 'sqs:ChangeMessageVisibility',
  'lambda:Invoke': 'lambda:InvokeFunction',
  'lambda:InvokeWithResponseStream': 'lambda:InvokeFunction',
};

/**
 * The IAM action that `command` of `module` needs.
 * @throws Error for a command or client it has no mapping for, so that a new kind of call is mapped, not missed.
 */
function actionOf(module: string, command: string): string {
  if (module === '@aws-sdk/lib-dynamodb') {
    const action = DOCUMENT_CLIENT_ACTIONS[command];
    if (action === undefined)
      throw new Error(`no IAM action is known for ${command} of ${module}: add it to DOCUMENT_CLIENT_ACTIONS`);
    return action;
  }
  const service = /^@aws-sdk\/client-(.+)$/.exec(module)?.[1];
  const prefix = service === undefined ? undefined : SERVICE_PREFIXES[service];
  if (prefix === undefined) throw new Error(`no IAM prefix is known for ${module}: add it to SERVICE_PREFIXES`);
  const action = `${prefix}:${command.replace(/Command$/, '')}`;
  return RENAMED_ACTIONS[action] ?? action;
}

/**
 * Every input esbuild bundles for `handler` (a path from the repository root), as serverless-esbuild bundles it
 * (serverless.yml's `custom.esbuild`): repository files and package files, relative to the repository root.
 */
export async function bundleInputs(handler: string): Promise<string[]> {
  const result = await build({
    entryPoints: [path.join(REPO_ROOT, handler)],
    absWorkingDir: REPO_ROOT,
    bundle: true,
    platform: 'node',
    target: 'node22',
    write: false,
    metafile: true,
    logLevel: 'silent',
  });
  return Object.keys(result.metafile.inputs);
}

/** The repository files esbuild bundles for `handler` (a path from the repository root), as absolute paths. */
export async function bundledFiles(handler: string): Promise<string[]> {
  return (await bundleInputs(handler))
    .filter((input) => !input.includes('node_modules'))
    .map((input) => path.resolve(REPO_ROOT, input));
}

/** The SDK commands of the handlers' code, on one TypeScript program over the repository's functions. */
export class SdkCommandAnalysis {
  private readonly program: ts.Program;
  private readonly checker: ts.TypeChecker;

  /** @param entries the handlers' files, from the repository root (e.g. `functions/worker.ts`). */
  constructor(entries: readonly string[]) {
    this.program = ts.createProgram(
      entries.map((entry) => path.join(REPO_ROOT, entry)),
      tsProject().options,
    );
    this.checker = this.program.getTypeChecker();
  }

  /** Every SDK command constructed (or sent by a Parameters provider) anywhere in `files`, reachable or not. */
  constructedIn(files: readonly string[]): SdkCommand[] {
    const found: SdkCommand[] = [];
    const visit = (node: ts.Node): void => {
      const command = this.commandAt(node) ?? this.providerCommandAt(node);
      if (command !== undefined) found.push(command);
      ts.forEachChild(node, visit);
    };
    for (const file of files) visit(this.sourceFile(file));
    return found;
  }

  /**
   * The SDK commands that the exported `handler` of `entry` can construct, given the repository files of its
   * bundle (see {@link bundledFiles}).
   * @throws Error when the handler uses a paginator, a waiter or an aggregated client (which send commands
   *   without a `new …Command`), or a command {@link actionOf} cannot map.
   */
  reachableFrom(entry: string, files: readonly string[]): SdkCommand[] {
    const found: SdkCommand[] = [];
    const done = new Set<ts.Node>();
    const pending: ts.Node[] = [];
    // Class members of the bundle by name: what a call through a port's member may run.
    const membersByName = new Map<string, ts.ClassElement[]>();
    for (const file of files) {
      const collect = (node: ts.Node): void => {
        if (ts.isClassDeclaration(node) || ts.isClassExpression(node)) {
          for (const member of node.members) {
            const name = member.name === undefined ? undefined : nameText(member.name);
            if (name !== undefined) membersByName.set(name, [...(membersByName.get(name) ?? []), member]);
          }
        }
        ts.forEachChild(node, collect);
      };
      collect(this.sourceFile(file));
    }

    const reach = (declaration: ts.Node): void => {
      if (done.has(declaration) || !isRepositoryFile(declaration.getSourceFile().fileName)) return;
      done.add(declaration);
      pending.push(declaration);
    };

    // Walks code that runs: records commands, reaches what it refers to. Functions and classes declared inside it
    // run only when referred to; inline function expressions are taken to run.
    const walk = (node: ts.Node): void => {
      if (
        ts.isTypeNode(node) ||
        ts.isInterfaceDeclaration(node) ||
        ts.isTypeAliasDeclaration(node) ||
        ts.isImportDeclaration(node)
      )
        return;
      if (ts.isFunctionDeclaration(node) || ts.isClassDeclaration(node)) return;
      if (ts.isClassExpression(node)) return reach(node);
      const command = this.commandAt(node) ?? this.providerCommandAt(node);
      if (command !== undefined) found.push(command);
      this.refuseHiddenSends(node);
      if (ts.isIdentifier(node) || ts.isPrivateIdentifier(node))
        for (const declaration of this.declarationsOf(node)) reach(declaration);
      ts.forEachChild(node, walk);
    };

    // Runs a reached declaration: its body, or for a port's member every class member of its name in the bundle.
    const run = (declaration: ts.Node): void => {
      if (ts.isMethodSignature(declaration) || ts.isPropertySignature(declaration)) {
        const name = nameText(declaration.name);
        for (const member of (name === undefined ? undefined : membersByName.get(name)) ?? []) reach(member);
      } else if (ts.isClassDeclaration(declaration) || ts.isClassExpression(declaration)) {
        // Constructing a class runs its constructor, its field initialisers and its base class's.
        for (const clause of declaration.heritageClauses ?? [])
          if (clause.token === ts.SyntaxKind.ExtendsKeyword) clause.types.forEach((type) => walk(type.expression));
        for (const member of declaration.members) {
          if (ts.isConstructorDeclaration(member) || ts.isClassStaticBlockDeclaration(member)) reach(member);
          else if (ts.isPropertyDeclaration(member) && member.initializer !== undefined) walk(member.initializer);
        }
      } else if (ts.isFunctionLike(declaration)) {
        for (const parameter of declaration.parameters)
          if (parameter.initializer !== undefined) walk(parameter.initializer);
        const body = (declaration as ts.FunctionLikeDeclarationBase).body;
        if (body !== undefined) walk(body);
      } else if (ts.isClassStaticBlockDeclaration(declaration)) {
        walk(declaration.body);
      } else if (
        (ts.isVariableDeclaration(declaration) ||
          ts.isPropertyDeclaration(declaration) ||
          ts.isPropertyAssignment(declaration)) &&
        declaration.initializer !== undefined
      ) {
        walk(declaration.initializer);
      }
    };

    // Lambda calls the handler; every bundled module runs its top-level statements when loaded (a top-level
    // function value runs only when referred to).
    const handler = this.checker
      .getExportsOfModule(this.checker.getSymbolAtLocation(this.sourceFile(path.join(REPO_ROOT, entry)))!)
      .find((symbol) => symbol.name === 'handler');
    if (handler?.valueDeclaration === undefined) throw new Error(`${entry} exports no handler`);
    reach(handler.valueDeclaration);
    for (const file of files) {
      for (const statement of this.sourceFile(file).statements) {
        if (ts.isVariableStatement(statement)) {
          for (const declaration of statement.declarationList.declarations) {
            const value = declaration.initializer;
            if (value !== undefined && !ts.isArrowFunction(value) && !ts.isFunctionExpression(value)) walk(value);
          }
        } else if (!ts.isExportDeclaration(statement)) {
          walk(statement);
        }
      }
    }
    for (let next = pending.pop(); next !== undefined; next = pending.pop()) run(next);
    return found;
  }

  private sourceFile(file: string): ts.SourceFile {
    const source = this.program.getSourceFile(file);
    if (source === undefined)
      throw new Error(`${path.relative(REPO_ROOT, file)} is bundled but not in the TypeScript program`);
    return source;
  }

  /** The declarations an identifier refers to, through imports; a shorthand `{ name }` refers to its value too. */
  private declarationsOf(node: ts.Identifier | ts.PrivateIdentifier): ts.Node[] {
    const symbols = [this.checker.getSymbolAtLocation(node)];
    if (ts.isShorthandPropertyAssignment(node.parent))
      symbols.push(this.checker.getShorthandAssignmentValueSymbol(node.parent));
    return symbols.flatMap((symbol) => {
      if (symbol === undefined) return [];
      const target = symbol.flags & ts.SymbolFlags.Alias ? this.checker.getAliasedSymbol(symbol) : symbol;
      return target.declarations ?? [];
    });
  }

  /** The SDK package that `node` (an identifier or `namespace.name`) was imported from, and the name imported. */
  private sdkImport(node: ts.Expression): { module: string; name: string } | undefined {
    const identifier = ts.isPropertyAccessExpression(node) ? node.expression : node;
    if (!ts.isIdentifier(identifier)) return undefined;
    const declaration = this.checker.getSymbolAtLocation(identifier)?.declarations?.[0];
    if (declaration === undefined) return undefined;
    let name: string;
    let imported: ts.ImportDeclaration | ts.JSDocImportTag;
    if (ts.isImportSpecifier(declaration) && !ts.isPropertyAccessExpression(node)) {
      name = (declaration.propertyName ?? declaration.name).text;
      imported = declaration.parent.parent.parent;
    } else if (ts.isNamespaceImport(declaration) && ts.isPropertyAccessExpression(node)) {
      name = node.name.text;
      imported = declaration.parent.parent;
    } else {
      return undefined;
    }
    const module = (imported.moduleSpecifier as ts.StringLiteral).text;
    return module.startsWith('@aws-sdk/') ? { module, name } : undefined;
  }

  /** The command `node` constructs, if it is `new XxxCommand(…)` of an AWS SDK package. */
  private commandAt(node: ts.Node): SdkCommand | undefined {
    if (!ts.isNewExpression(node)) return undefined;
    const imported = this.sdkImport(node.expression);
    if (imported === undefined || !imported.name.endsWith('Command')) return undefined;
    return {
      module: imported.module,
      command: imported.name,
      action: actionOf(imported.module, imported.name),
      file: path.relative(REPO_ROOT, node.getSourceFile().fileName),
    };
  }

  /**
   * The command a call of a Powertools Parameters provider sends with the client it was given (`provider.get(name)`
   * of an `SSMProvider` sends `GetParameterCommand`), if `node` is one.
   * @throws Error at a call of another of its methods, which sends other commands: map it in {@link PROVIDER_COMMANDS}.
   */
  private providerCommandAt(node: ts.Node): SdkCommand | undefined {
    if (!ts.isCallExpression(node) || !ts.isPropertyAccessExpression(node.expression)) return undefined;
    const type = this.checker.getTypeAtLocation(node.expression.expression);
    const declaration = type.getSymbol()?.declarations?.[0];
    const provider = type.getSymbol()?.name;
    if (
      declaration === undefined ||
      provider === undefined ||
      !declaration
        .getSourceFile()
        .fileName.includes(`${path.sep}@aws-lambda-powertools${path.sep}parameters${path.sep}`)
    )
      return undefined;
    const method = node.expression.name.text;
    const sent = PROVIDER_COMMANDS[`${provider}.${method}`];
    const where = path.relative(REPO_ROOT, node.getSourceFile().fileName);
    if (sent === undefined)
      throw new Error(`${where}: ${provider}.${method} sends commands unseen; map it in PROVIDER_COMMANDS`);
    return { ...sent, action: actionOf(sent.module, sent.command), file: where };
  }

  /**
   * @throws Error at a paginator or waiter call, or an aggregated client's construction (`new SQS(…)`): they send
   *   commands this analysis cannot see, so the code should use `client.send(new XxxCommand(…))` instead.
   */
  private refuseHiddenSends(node: ts.Node): void {
    const where = () =>
      `${path.relative(REPO_ROOT, node.getSourceFile().fileName)}:${node.getSourceFile().getLineAndCharacterOfPosition(node.getStart()).line + 1}`;
    if (ts.isCallExpression(node)) {
      const name = this.sdkImport(node.expression)?.name;
      if (name !== undefined && /^(paginate|waitFor|waitUntil)/.test(name))
        throw new Error(`${where()}: ${name} sends commands unseen; send them one by one`);
    }
    if (ts.isNewExpression(node)) {
      const name = this.sdkImport(node.expression)?.name;
      if (name !== undefined && !/(Command|Client|Exception)$/.test(name))
        throw new Error(`${where()}: new ${name} sends commands unseen; use its …Client`);
    }
  }
}

/** What each Powertools Parameters provider method the code calls sends through the SDK client it was given. */
const PROVIDER_COMMANDS: Readonly<Record<string, { readonly module: string; readonly command: string }>> = {
  'SSMProvider.get': { module: '@aws-sdk/client-ssm', command: 'GetParameterCommand' },
};

function isRepositoryFile(file: string): boolean {
  return file.startsWith(REPO_ROOT + path.sep) && !file.includes(`${path.sep}node_modules${path.sep}`);
}

function nameText(name: ts.PropertyName): string | undefined {
  return ts.isIdentifier(name) || ts.isPrivateIdentifier(name) || ts.isStringLiteral(name) || ts.isNumericLiteral(name)
    ? name.text
    : undefined;
}
