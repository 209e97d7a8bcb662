import { ConfigError } from '../../config';
import { RoutingDirectory } from './directory';

export { isValidAbaChecksum, routingNumberProblem, abaCheckDigit, hasValidAbaPrefix } from './aba';
export { RoutingDirectory, SANDBOX_ROUTING_NUMBERS } from './directory';
export type { Institution, InstitutionSupport, FedAchLoadCounts } from './directory';

/**
 * The directory the service runs with: the sandbox banks, plus the FedACH file named by ROUTING_DIRECTORY_FILE
 * when set. An unreadable file stops the start; the counts are for the start-up log line.
 */
export function loadRoutingDirectory(file: string | null): { directory: RoutingDirectory; loaded: number; skipped: number } {
  if (file === null) return { directory: new RoutingDirectory(), loaded: 0, skipped: 0 };
  try {
    return RoutingDirectory.fromFedAchFile(file);
  } catch (err) {
    const reason = (err as NodeJS.ErrnoException).code ?? (err as Error).message;
    throw new ConfigError('ROUTING_DIRECTORY_FILE', `a readable FedACH directory file (${reason})`, file);
  }
}
