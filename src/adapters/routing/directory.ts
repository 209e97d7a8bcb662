import { readFileSync } from 'node:fs';
import { routingNumberProblem } from './aba';

export type InstitutionSupport = 'supported' | 'testing' | 'unsupported';

export interface Institution {
  name: string;
  support: InstitutionSupport;
}

export interface FedAchLoadCounts {
  loaded: number;
  skipped: number;
}

/** The built-in banks that let anyone aim a sandbox read at a given outcome. */
export const SANDBOX_ROUTING_NUMBERS = {
  supported: '110000000',
  testing: '110000013',
  unsupported: '110000026',
  /** Read as the supported one, but its accounts count as not validated (the sandbox's accounts otherwise count as linked). */
  unvalidated: '110000039',
} as const;

const SANDBOX_INSTITUTIONS: ReadonlyMap<string, Institution> = new Map([
  [SANDBOX_ROUTING_NUMBERS.supported, { name: 'Sandbox Bank', support: 'supported' }],
  [SANDBOX_ROUTING_NUMBERS.testing, { name: 'Sandbox Testing Bank', support: 'testing' }],
  [SANDBOX_ROUTING_NUMBERS.unsupported, { name: 'Sandbox Unsupported Bank', support: 'unsupported' }],
  [SANDBOX_ROUTING_NUMBERS.unvalidated, { name: 'Sandbox Unvalidated Bank', support: 'supported' }],
]);

interface FedAchEntry {
  name: string;
  // Set for record type 2: items for this number go to the institution at the new number (merger or renumbering).
  redirectTo: string | null;
}

// FedACH directory layout (1-based columns): routing 1–9, office code 10, servicing FRB 11–19, record type 20,
// change date 21–26, new routing number 27–35, customer name 36–71, then address, city, state, zip, phone,
// status and data view codes, and filler to column 155.
const RECORD_LENGTH = 155;
const NAME_END = 71;

// Redirect chains are rare and short; the bound only protects against a file whose records point at each other.
const MAX_REDIRECTS = 5;

function parseFedAchLine(line: string): { routing: string; entry: FedAchEntry } | null {
  // Some tools strip the trailing filler (and blank trailing fields); everything up to the name must be there.
  if (line.length > RECORD_LENGTH || line.length < NAME_END) return null;
  const routing = line.slice(0, 9);
  const officeCode = line[9];
  const servicingFrb = line.slice(10, 19);
  const recordType = line[19];
  const newRouting = line.slice(26, 35);
  const name = line.slice(35, NAME_END).trim();

  if (routingNumberProblem(routing) !== null) return null;
  if (officeCode !== 'O' && officeCode !== 'B') return null;
  if (!/^\d{9}$/.test(servicingFrb)) return null;
  if (recordType !== '0' && recordType !== '1' && recordType !== '2') return null;
  if (name === '') return null;
  if (recordType === '2') {
    if (routingNumberProblem(newRouting) !== null) return null;
    return { routing, entry: { name, redirectTo: newRouting === routing ? null : newRouting } };
  }
  return { routing, entry: { name, redirectTo: null } };
}

/**
 * Routing number → institution. The sandbox banks are always present and always win; a FedACH directory file
 * adds real institutions, all treated as supported.
 */
export class RoutingDirectory {
  private readonly fromFile = new Map<string, FedAchEntry>();
  // File records for the sandbox numbers are shadowed, so they are not counted in size.
  private shadowed = 0;

  /** A directory with the sandbox banks plus the institutions in a FedACH file (read synchronously at start). */
  static fromFedAchFile(path: string): { directory: RoutingDirectory } & FedAchLoadCounts {
    const directory = new RoutingDirectory();
    // latin1 keeps one character per byte, so the fixed columns stay aligned whatever bytes the file holds.
    const counts = directory.loadFedAch(readFileSync(path, 'latin1'));
    return { directory, ...counts };
  }

  /** Adds the records of a FedACH directory text; blank and malformed lines are skipped and counted. */
  loadFedAch(text: string): FedAchLoadCounts {
    const lines = text.split(/\r?\n/);
    // A final newline ends the last record; it does not start an empty one.
    if (lines.length > 0 && lines[lines.length - 1] === '') lines.pop();
    let loaded = 0;
    let skipped = 0;
    for (const line of lines) {
      const parsed = parseFedAchLine(line);
      if (parsed === null) {
        skipped++;
        continue;
      }
      if (!this.fromFile.has(parsed.routing) && SANDBOX_INSTITUTIONS.has(parsed.routing)) this.shadowed++;
      this.fromFile.set(parsed.routing, parsed.entry);
      loaded++;
    }
    return { loaded, skipped };
  }

  lookup(routing: string): Institution | null {
    const sandbox = SANDBOX_INSTITUTIONS.get(routing);
    if (sandbox) return { ...sandbox };
    let entry = this.fromFile.get(routing);
    if (!entry) return null;
    // Report the institution that actually receives the items; keep the record's own name when the new number
    // is not in the file.
    for (let hops = 0; entry.redirectTo !== null && hops < MAX_REDIRECTS; hops++) {
      const next = this.fromFile.get(entry.redirectTo);
      if (!next) break;
      entry = next;
    }
    return { name: entry.name, support: 'supported' };
  }

  /** Number of routing numbers that resolve to an institution. */
  get size(): number {
    return SANDBOX_INSTITUTIONS.size + this.fromFile.size - this.shadowed;
  }
}
