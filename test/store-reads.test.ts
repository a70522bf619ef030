/**
 * Store reads fail with `StoreUnavailable`, never die: the modules that read a store (the durable store's reads,
 * the memory store, the sleepers' and closed agents' records, the restore, the run records, the cluster's
 * fleet log, the scheduler's and webhooks' saved state) turn no failure into a defect, and the store's read
 * methods name StoreUnavailable in their types. The behaviour is tested per backend in storeSuite.ts.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "vitest"

const ROOT = path.join(import.meta.dirname, "..")

/** Every module whose job includes reading the store. */
const READERS = [
  "packages/core/src/Store.ts",
  "packages/core/src/internal/sqlReads.ts",
  "packages/core/src/internal/sqlStore.ts",
  "packages/core/src/internal/sqlWriter.ts",
  "packages/core/src/internal/dormant.ts",
  "packages/core/src/internal/closedAgent.ts",
  "packages/core/src/internal/restore.ts",
  "packages/core/src/internal/runDiffs.ts",
  "packages/core/src/RunRecord.ts",
  "packages/core/src/RunInbox.ts",
  "packages/core/src/ReportLog.ts",
  "packages/cluster/src/FleetLog.ts",
  "packages/cluster/src/ClusterStore.ts",
  "packages/scheduler/src/Scheduler.ts",
  "packages/webhooks/src/Notifier.ts",
  "packages/webhooks/src/internal/deliveries.ts"
]

const DEFECTS = /\b(orDie|orDieWith|dieMessage|dieSync)\b|Effect\.die\(/

describe("store reads", () => {
  it("turn no failure into a defect in any module that reads a store", () => {
    const found = READERS.flatMap((file) =>
      fs.readFileSync(path.join(ROOT, file), "utf8").split("\n").flatMap((line, index) =>
        DEFECTS.test(line) ? [`${file}:${index + 1}: ${line.trim()}`] : []
      )
    )
    expect(found).toEqual([])
  })

  it("name StoreUnavailable in every read method of the store's type", () => {
    const source = fs.readFileSync(path.join(ROOT, "packages/core/src/Store.ts"), "utf8")
    const shape = source.slice(source.indexOf("export interface StoreShape {"))
    const body = shape.slice(0, shape.indexOf("\n}\n"))
    const reads = ["readReports", "agents", "agent", "turns", "lastTurn", "runs", "run", "loadState", "costs"]
    const untyped = reads.filter((name) => {
      const at = body.search(new RegExp(`readonly ${name}:`))
      const declaration = body.slice(at, body.indexOf("\n", at))
      return at === -1 || !declaration.includes("StoreUnavailable>")
    })
    expect(untyped).toEqual([])
  })
})
