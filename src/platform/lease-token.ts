// The token a claim writes on the queue rows it leases: this replica's id, a nonce of this process, and a
// count. A claim's finish names its token, so a finish whose lease ran out and was taken over by another claim
// (here or on another replica) changes nothing of the row; the new holder's finish does.

let replica = `pid${process.pid}`;
const boot = crypto.randomUUID().slice(0, 8);
let n = 0;

/** Set once at start from REPLICA_ID. */
export function setReplicaId(id: string): void {
  replica = id;
}

/** What every token of this replica begins with (a replica restarted under the same id takes its claims back). */
export function replicaPrefix(): string {
  return `${replica}/`;
}

/** A new claim's token. */
export function newLeaseToken(): string {
  return `${replica}/${boot}/${(++n).toString(36)}`;
}
