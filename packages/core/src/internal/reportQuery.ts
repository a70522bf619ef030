/** The report log's entries and cursor reads: shared by the log and the stores behind it. */
import type { SqlClient } from "@effect/sql/SqlClient"
import type { Fragment } from "@effect/sql/Statement"
import type { ReportEntry, ReportQuery } from "../AgentView.js"

export type { ReportEntry, ReportKind, ReportPage, ReportQuery } from "../AgentView.js"

export const DEFAULT_LIMIT = 100
export const MAX_LIMIT = 10_000

export const matches = (entry: ReportEntry, agent: string | undefined, kinds: ReadonlyArray<string> | undefined) =>
  (agent === undefined || entry.agent === agent) && (kinds === undefined || kinds.includes(entry.kind))

/** The SQL filter of a report query: entries after `since` up to `upTo`, of its agent and kinds (no kinds, none). */
export const reportWhere = (
  sql: SqlClient,
  query: Pick<ReportQuery, "agent" | "kinds" | "since">,
  upTo: number
): Fragment =>
  sql.and([
    sql`seq > ${query.since ?? 0}`,
    sql`seq <= ${upTo}`,
    ...(query.agent === undefined ? [] : [sql`agent = ${query.agent}`]),
    ...(query.kinds === undefined
      ? []
      : query.kinds.length === 0
      ? [sql`1 = 0`]
      : [sql`kind in ${sql.in(query.kinds)}`])
  ])
