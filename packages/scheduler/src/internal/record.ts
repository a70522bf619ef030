/** The scheduler's report-log writer: every entry under `scheduler`, each one a span as well. */
import type { ReportEntry, ReportLog } from "@flotta/core/ReportLog"
import { Effect } from "effect"
import { ReportKinds, SCHEDULER_AGENT } from "../Steering.js"

export type Recorder = (kind: string, data: Record<string, unknown>) => Effect.Effect<ReportEntry>

export const recorder = (reports: Pick<ReportLog, "post">): Recorder => (kind, data) =>
  // A fire's entry sits in the fire's own span; every other entry gets a span of its own.
  kind === ReportKinds.fire
    ? reports.post(SCHEDULER_AGENT, kind, data)
    : reports.post(SCHEDULER_AGENT, kind, data).pipe(
      Effect.withSpan(`scheduler.${kind}`, {
        attributes: Object.fromEntries(
          Object.entries(data).filter(([, v]) => typeof v === "string" || typeof v === "number")
            .map(([k, v]) => [`flotta.scheduler.${k}`, v])
        )
      })
    )
