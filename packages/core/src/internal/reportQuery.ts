/** The report log's entries and cursor reads: shared by the log and the stores behind it. */
export type ReportKind =
  | "spawned"
  | "turn_started"
  | "result"
  | "error"
  | "closed"
  | "crashed"
  | "restarted"
  | "permission"
  | (string & {})

export interface ReportEntry {
  readonly seq: number
  readonly at: string
  readonly agent: string
  readonly kind: ReportKind
  readonly turnId?: string
  readonly data: unknown
  /** The host that wrote it, in a fleet spread over several hosts (`@flotta/cluster`). */
  readonly host?: string
}

export interface ReportQuery {
  /** Entries strictly after this sequence number (default 0: from the start). */
  readonly since?: number
  readonly agent?: string
  readonly kinds?: ReadonlyArray<string>
  /** At most this many entries (default 100, at most 10,000). */
  readonly limit?: number
  /**
   * A tail read: the last this many matching entries (at most 10,000; `limit` is ignored), oldest first, and
   * `next` is the cursor after the newest entry in the log.
   */
  readonly last?: number
}

export interface ReportPage {
  readonly entries: ReadonlyArray<ReportEntry>
  /** The cursor to pass as `since` next time. */
  readonly next: number
}

export const DEFAULT_LIMIT = 100
export const MAX_LIMIT = 10_000

export const matches = (entry: ReportEntry, agent: string | undefined, kinds: ReadonlyArray<string> | undefined) =>
  (agent === undefined || entry.agent === agent) && (kinds === undefined || kinds.includes(entry.kind))
