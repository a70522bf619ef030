/** The scheduler's report-log writer: every entry under `scheduler`, each one a span as well. */
import type { Kind } from "@flotta/core/ReportEvent"
import type { ReportEntry, ReportLog } from "@flotta/core/ReportLog"
import { Effect } from "effect"
import { fire } from "../SchedulerEvents.js"
import { SCHEDULER_AGENT } from "../Steering.js"

/** Posts one of the scheduler's kinds (`SchedulerEvents`), its data checked against the kind's Schema. */
export type Recorder = <K extends string, A extends object>(
  kind: Kind<K, A>,
  data: NoInfer<A>
) => Effect.Effect<ReportEntry>

export const recorder = (reports: Pick<ReportLog, "post">): Recorder => (kind, data) =>
  // A fire's entry sits in the fire's own span; every other entry gets a span of its own.
  kind.kind === fire.kind
    ? reports.post(SCHEDULER_AGENT, kind, data)
    : reports.post(SCHEDULER_AGENT, kind, data).pipe(
      Effect.withSpan(`scheduler.${kind.kind}`, {
        attributes: Object.fromEntries(
          Object.entries(data).filter(([, v]) => typeof v === "string" || typeof v === "number")
            .map(([k, v]) => [`flotta.scheduler.${k}`, v])
        )
      })
    )
