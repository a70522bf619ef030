/**
 * A restart of the host, graceful or not: every agent the store has as live comes back under its name, resuming
 * its session, with its queued turns in order; `Flotta` does it as it starts over a durable store. This module is
 * its public face: the report of what came back (`RestoreReport`).
 */
export type { RestoreReport } from "./internal/restore.js"
