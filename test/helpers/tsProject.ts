import path from 'node:path';
import ts from 'typescript';
import { REPO_ROOT } from '../../tools/local/packageService';

/**
 * The repository's tsconfig.json as the compiler reads it: its compiler options and the files it includes (absolute
 * paths with forward slashes, as the compiler writes them).
 * @throws Error when tsconfig.json cannot be read.
 */
export function tsProject(): ts.ParsedCommandLine {
  const configFile = ts.readConfigFile(path.join(REPO_ROOT, 'tsconfig.json'), (file) => ts.sys.readFile(file));
  if (configFile.error !== undefined)
    throw new Error(ts.flattenDiagnosticMessageText(configFile.error.messageText, '\n'));
  return ts.parseJsonConfigFileContent(configFile.config, ts.sys, REPO_ROOT);
}
