/** Reads the TSDoc of the declarations the configuration reference describes, with the TypeScript compiler API. */
import path from 'node:path';
import ts from 'typescript';

/** The repository root. */
export const REPO_ROOT = path.resolve(__dirname, '../..');

/** What the TSDoc of one member says. */
export interface MemberDoc {
  readonly text: string;
  readonly defaultTag?: string;
}

/** TSDoc text as markdown: `{@link X}` becomes `` `X` `` (or its label). */
function plain(parts: ts.SymbolDisplayPart[] | undefined): string {
  return ts
    .displayPartsToString(parts)
    .replace(
      /\{@link(?:code|plain)?\s+([^}|\s]+)(?:\s*\|?\s*([^}]+))?\}/g,
      (_all, target: string, label?: string) => `\`${(label ?? target).trim()}\``,
    );
}

/** Reads TSDoc with the TypeScript compiler API: one program over the sources that declare the settings. */
export class DocReader {
  private readonly program: ts.Program;
  private readonly checker: ts.TypeChecker;

  constructor(files: readonly string[]) {
    this.program = ts.createProgram(
      files.map((file) => path.join(REPO_ROOT, file)),
      {
        target: ts.ScriptTarget.ES2022,
        module: ts.ModuleKind.CommonJS,
        strict: true,
        noEmit: true,
        skipLibCheck: true,
        types: [],
      },
    );
    this.checker = this.program.getTypeChecker();
  }

  /** The exported symbol `name` of `file`. @throws Error when the file does not export it. */
  private exported(file: string, name: string): ts.Symbol {
    const source = this.program.getSourceFile(path.join(REPO_ROOT, file));
    const moduleSymbol = source === undefined ? undefined : this.checker.getSymbolAtLocation(source);
    const symbol =
      moduleSymbol === undefined
        ? undefined
        : this.checker.getExportsOfModule(moduleSymbol).find((s) => s.name === name);
    if (symbol === undefined)
      throw new Error(`${file} does not export ${name}, whose TSDoc the configuration reference reads`);
    return symbol;
  }

  private docOf(symbol: ts.Symbol): MemberDoc {
    const text = plain(symbol.getDocumentationComment(this.checker));
    const tag = symbol.getJsDocTags(this.checker).find((t) => t.name === 'default');
    return tag?.text === undefined ? { text } : { text, defaultTag: plain(tag.text) };
  }

  /** The TSDoc of each member of the exported interface `name` of `file`, inherited members included. */
  members(file: string, name: string): Map<string, MemberDoc> {
    const type = this.checker.getDeclaredTypeOfSymbol(this.exported(file, name));
    return new Map(this.checker.getPropertiesOfType(type).map((member) => [member.name, this.docOf(member)]));
  }

  /**
   * The type of member `member` of the exported interface `name` of `file`: its TSDoc (that of the type's own
   * declaration, e.g. `PacingSettings`) and the TSDoc of each of its members.
   */
  memberType(
    file: string,
    name: string,
    member: string,
  ): { readonly doc: string; readonly members: Map<string, MemberDoc> } {
    const owner = this.checker.getDeclaredTypeOfSymbol(this.exported(file, name));
    const property = this.checker.getPropertyOfType(owner, member);
    if (property === undefined) return { doc: '', members: new Map() };
    const type = this.checker.getTypeOfSymbol(property);
    const doc = plain(type.getSymbol()?.getDocumentationComment(this.checker));
    return { doc, members: new Map(this.checker.getPropertiesOfType(type).map((m) => [m.name, this.docOf(m)])) };
  }

  /** The TSDoc of the export `name` of `file` (a function, a constant, a type), with its line breaks, without its tags. */
  symbolDoc(file: string, name: string): string {
    return plain(this.exported(file, name).getDocumentationComment(this.checker));
  }
}
