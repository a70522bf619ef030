import { assert, describe, it } from "@effect/vitest"
import * as Calendar from "../src/Calendar.js"
import * as Intervals from "../src/internal/intervals.js"
import * as WorkingHours from "../src/WorkingHours.js"

const UTC: WorkingHours.TimeZone = { _tag: "Utc" }
const PDT_FIXED: WorkingHours.TimeZone = { _tag: "Offset", seconds: -25200 }
const LA: WorkingHours.TimeZone = { _tag: "Zone", name: "America/Los_Angeles" }

const at = (isoText: string) => Date.parse(isoText)
/** A local wall-clock reading as local milliseconds. */
const local = (text: string) => Date.parse(`${text}Z`)
const w = (start: string, end: string): WorkingHours.Window =>
  WorkingHours.parseWindow([start, end]) as WorkingHours.Window
const day = (date: string) => WorkingHours.parseDate(date)!
const isoOf = (i: WorkingHours.Interval) => [new Date(i.from).toISOString(), new Date(i.until).toISOString()]

const weekdays = (window: WorkingHours.Window): WorkingHours.Hours => ({
  mon: [window],
  tue: [window],
  wed: [window],
  thu: [window],
  fri: [window]
})

const calendar = (
  zone: WorkingHours.TimeZone,
  hours: WorkingHours.Hours,
  extra: Partial<Calendar.Calendar> = {}
): Calendar.Calendar => ({
  zone,
  hours,
  added: [],
  removed: [],
  ...extra
})

describe("clock texts", () => {
  it("parses times of day and windows, and says what is wrong", () => {
    assert.strictEqual(WorkingHours.parseClock("08:47"), 527)
    assert.strictEqual(WorkingHours.parseClock("24:00"), undefined)
    assert.strictEqual(WorkingHours.parseClock("24:00", true), 1440)
    assert.strictEqual(WorkingHours.parseClock("8:47"), undefined)
    assert.strictEqual(WorkingHours.parseClock("12:60"), undefined)
    assert.deepStrictEqual(WorkingHours.parseWindow(["08:47", "17:00"]), { start: 527, end: 1020 })
    assert.deepStrictEqual(WorkingHours.parseWindow("22:00-02:00"), { start: 1320, end: 120 })
    assert.deepStrictEqual(WorkingHours.parseWindow(["00:00", "24:00"]), { start: 0, end: 1440 })
    assert.match(WorkingHours.parseWindow(["09:00", "09:00"]) as string, /same time/)
    assert.match(WorkingHours.parseWindow(["9am", "17:00"]) as string, /start "9am" is not a time of day/)
    assert.match(WorkingHours.parseWindow(["09:00", "25:00"]) as string, /end "25:00"/)
    assert.match(WorkingHours.parseWindow(["09:00"]) as string, /expected/)
    assert.strictEqual(WorkingHours.formatClock(527), "08:47")
  })

  it("parses real dates only", () => {
    assert.strictEqual(WorkingHours.formatDate(day("2025-03-09")), "2025-03-09")
    assert.strictEqual(WorkingHours.weekdayOf(day("2025-03-09")), "sun")
    assert.strictEqual(WorkingHours.weekdayOf(day("2025-03-10")), "mon")
    assert.isUndefined(WorkingHours.parseDate("2025-02-30"))
    assert.isUndefined(WorkingHours.parseDate("2025-3-9"))
  })
})

describe("time zones", () => {
  it("utc and a fixed offset convert both ways", () => {
    assert.strictEqual(WorkingHours.fromLocal(UTC, local("2025-03-10T08:47:00")), at("2025-03-10T08:47:00Z"))
    assert.strictEqual(WorkingHours.fromLocal(PDT_FIXED, local("2025-03-10T08:47:00")), at("2025-03-10T15:47:00Z"))
    assert.strictEqual(WorkingHours.toLocal(PDT_FIXED, at("2025-03-10T15:47:00Z")), local("2025-03-10T08:47:00"))
    assert.strictEqual(WorkingHours.formatLocal(PDT_FIXED, at("2025-03-10T15:47:00Z")), "2025-03-10T08:47:00-07:00")
    assert.strictEqual(WorkingHours.describeZone(PDT_FIXED), "-07:00")
    assert.strictEqual(WorkingHours.describeZone({ _tag: "Offset", seconds: 19800 }), "+05:30")
  })

  it("an IANA zone follows its offset through the year", () => {
    assert.strictEqual(WorkingHours.fromLocal(LA, local("2025-01-06T08:47:00")), at("2025-01-06T16:47:00Z"))
    assert.strictEqual(WorkingHours.fromLocal(LA, local("2025-07-07T08:47:00")), at("2025-07-07T15:47:00Z"))
    assert.strictEqual(WorkingHours.formatLocal(LA, at("2025-03-10T16:15:00Z")), "2025-03-10T09:15:00-07:00")
    assert.strictEqual(WorkingHours.formatLocal(LA, at("2025-03-08T17:15:00Z")), "2025-03-08T09:15:00-08:00")
    assert.strictEqual(WorkingHours.resolveZone("america/los_angeles"), "America/Los_Angeles")
    assert.isUndefined(WorkingHours.resolveZone("Mars/Olympus_Mons"))
  })

  it("a time the clocks skip moves forward by the gap; a repeated time is its first occurrence", () => {
    // 2025-03-09 02:00 PST → 03:00 PDT (10:00Z); 2025-11-02 02:00 PDT → 01:00 PST (09:00Z).
    assert.strictEqual(WorkingHours.fromLocal(LA, local("2025-03-09T02:30:00")), at("2025-03-09T10:30:00Z"))
    assert.strictEqual(WorkingHours.fromLocal(LA, local("2025-03-09T03:00:00")), at("2025-03-09T10:00:00Z"))
    assert.strictEqual(WorkingHours.fromLocal(LA, local("2025-03-09T01:59:00")), at("2025-03-09T09:59:00Z"))
    assert.strictEqual(WorkingHours.fromLocal(LA, local("2025-11-02T01:30:00")), at("2025-11-02T08:30:00Z"))
    assert.strictEqual(WorkingHours.fromLocal(LA, local("2025-11-02T02:00:00")), at("2025-11-02T10:00:00Z"))
    // Days start at local midnight on both sides of a change.
    assert.strictEqual(WorkingHours.dayStart(LA, day("2025-03-10")), at("2025-03-10T07:00:00Z"))
    assert.strictEqual(WorkingHours.dayStart(LA, day("2025-03-09")), at("2025-03-09T08:00:00Z"))
    assert.strictEqual(WorkingHours.localDay(LA, at("2025-11-02T07:30:00Z")), day("2025-11-02"))
  })
})

describe("windows", () => {
  it("on the spring-forward day a window keeps its wall-clock edges, and one inside the gap is shifted, not lost", () => {
    assert.deepStrictEqual(isoOf(WorkingHours.windowOn(LA, day("2025-03-09"), w("01:00", "04:00"))), [
      "2025-03-09T09:00:00.000Z", // 01:00 PST
      "2025-03-09T11:00:00.000Z" // 04:00 PDT: two real hours
    ])
    assert.deepStrictEqual(isoOf(WorkingHours.windowOn(LA, day("2025-03-09"), w("02:15", "02:45"))), [
      "2025-03-09T10:15:00.000Z",
      "2025-03-09T10:45:00.000Z"
    ])
    const cal = calendar(LA, { sun: [w("02:15", "02:45")] })
    assert.strictEqual(
      Calendar.workingMs(cal, at("2025-03-09T00:00:00Z"), at("2025-03-10T00:00:00Z")),
      30 * WorkingHours.MINUTE
    )
  })

  it("on the fall-back day the repeated hour is worked once", () => {
    assert.deepStrictEqual(isoOf(WorkingHours.windowOn(LA, day("2025-11-02"), w("01:00", "04:00"))), [
      "2025-11-02T08:00:00.000Z", // 01:00 PDT
      "2025-11-02T12:00:00.000Z" // 04:00 PST: four real hours
    ])
    const cal = calendar(LA, { sun: [w("01:15", "01:45")] })
    assert.isTrue(Calendar.isWorkingAt(cal, at("2025-11-02T08:20:00Z"))) // 01:20 PDT
    assert.isFalse(Calendar.isWorkingAt(cal, at("2025-11-02T09:20:00Z"))) // 01:20 PST, the second time round
    assert.strictEqual(
      Calendar.workingMs(cal, at("2025-11-02T00:00:00Z"), at("2025-11-03T00:00:00Z")),
      30 * WorkingHours.MINUTE
    )
  })

  it("a window past midnight ends on the next day", () => {
    const cal = calendar(UTC, { sat: [w("22:00", "02:00")] })
    assert.isTrue(Calendar.isWorkingAt(cal, at("2025-03-09T01:00:00Z"))) // Sunday 01:00
    assert.isFalse(Calendar.isWorkingAt(cal, at("2025-03-09T02:00:00Z")))
    assert.strictEqual(
      Calendar.workingMs(cal, at("2025-03-03T00:00:00Z"), at("2025-03-10T00:00:00Z")),
      4 * WorkingHours.HOUR
    )
  })

  const weekEdges = (cal: Calendar.Calendar, from: number, until: number) => {
    const edges: Array<string> = []
    for (
      let t = from, edge = Calendar.nextEdge(cal, t);
      edge !== undefined && edge < until;
      edge = Calendar.nextEdge(cal, t)
    ) {
      edges.push(`${Calendar.isWorkingAt(cal, edge) ? "open" : "close"} ${WorkingHours.formatLocal(cal.zone, edge)}`)
      t = edge
    }
    return edges
  }

  it("a week in UTC opens and closes on time", () => {
    const cal = calendar(UTC, weekdays(w("08:47", "17:00")))
    const edges = weekEdges(cal, at("2025-03-03T00:00:00Z"), at("2025-03-10T00:00:00Z"))
    assert.strictEqual(edges.length, 10)
    assert.deepStrictEqual(edges.slice(0, 2), ["open 2025-03-03T08:47:00+00:00", "close 2025-03-03T17:00:00+00:00"])
    assert.deepStrictEqual(edges.slice(-2), ["open 2025-03-07T08:47:00+00:00", "close 2025-03-07T17:00:00+00:00"])
    assert.strictEqual(
      Calendar.workingMs(cal, at("2025-03-03T00:00:00Z"), at("2025-03-10T00:00:00Z")),
      5 * (8 * WorkingHours.HOUR + 13 * WorkingHours.MINUTE)
    )
  })

  it("a week at a fixed offset opens and closes on local time", () => {
    const cal = calendar(PDT_FIXED, weekdays(w("08:47", "17:00")))
    const edges = weekEdges(cal, at("2025-03-03T00:00:00Z"), at("2025-03-10T08:00:00Z"))
    assert.strictEqual(edges.length, 10)
    assert.strictEqual(edges[0], "open 2025-03-03T08:47:00-07:00")
    assert.strictEqual(Calendar.nextEdge(cal, at("2025-03-03T00:00:00Z")), at("2025-03-03T15:47:00Z"))
  })

  const laWeek = calendar(LA, { ...weekdays(w("08:47", "17:00")), sun: [w("01:00", "04:00")] })

  it.each([
    {
      change: "spring",
      from: "2025-03-07T08:00:00Z",
      to: "2025-03-11T12:00:00Z",
      expected: [
        "open 2025-03-07T08:47:00-08:00",
        "close 2025-03-07T17:00:00-08:00",
        "open 2025-03-09T01:00:00-08:00",
        "close 2025-03-09T04:00:00-07:00",
        "open 2025-03-10T08:47:00-07:00",
        "close 2025-03-10T17:00:00-07:00"
      ]
    },
    {
      change: "fall",
      from: "2025-10-31T00:00:00Z",
      to: "2025-11-04T12:00:00Z",
      expected: [
        "open 2025-10-31T08:47:00-07:00",
        "close 2025-10-31T17:00:00-07:00",
        "open 2025-11-02T01:00:00-07:00",
        "close 2025-11-02T04:00:00-08:00",
        "open 2025-11-03T08:47:00-08:00",
        "close 2025-11-03T17:00:00-08:00"
      ]
    }
  ])("a week in Los Angeles across the $change change keeps wall-clock hours", ({ expected, from, to }) => {
    assert.deepStrictEqual(weekEdges(laWeek, at(from), at(to)), expected)
  })

  it("the next edge after the spring change's short night is Monday's opening", () => {
    assert.strictEqual(Calendar.nextEdge(laWeek, at("2025-03-09T12:00:00Z")), at("2025-03-10T15:47:00Z"))
  })
})

describe("calendars", () => {
  it("added time joins the hours and removed time cuts them", () => {
    const base = calendar(UTC, weekdays(w("09:00", "17:00")))
    const monday = at("2025-03-03T00:00:00Z")
    const cal = {
      ...base,
      added: [{ from: at("2025-03-03T17:00:00Z"), until: at("2025-03-03T18:00:00Z") }],
      removed: [{ from: at("2025-03-03T12:00:00Z"), until: at("2025-03-03T13:00:00Z") }]
    }
    assert.deepStrictEqual(Calendar.working(cal, monday, monday + WorkingHours.DAY).map(isoOf), [
      ["2025-03-03T09:00:00.000Z", "2025-03-03T12:00:00.000Z"],
      ["2025-03-03T13:00:00.000Z", "2025-03-03T18:00:00.000Z"]
    ])
  })

  it("counts working time forward: an interval of working time skips nights and weekends", () => {
    const cal = calendar(UTC, weekdays(w("09:00", "17:00")))
    // Friday 16:00 + 2 h of working time = Monday 10:00.
    assert.strictEqual(
      Calendar.afterWorking(cal, at("2025-03-07T16:00:00Z"), 2 * WorkingHours.HOUR),
      at("2025-03-10T10:00:00Z")
    )
    assert.isUndefined(Calendar.afterWorking(calendar(UTC, {}), 0, WorkingHours.HOUR))
  })

  it("merges and subtracts intervals", () => {
    assert.deepStrictEqual(Intervals.merge([{ from: 5, until: 8 }, { from: 1, until: 3 }, { from: 3, until: 4 }]), [
      { from: 1, until: 4 },
      { from: 5, until: 8 }
    ])
    assert.deepStrictEqual(
      Intervals.subtract([{ from: 0, until: 10 }], [{ from: 2, until: 3 }, { from: 9, until: 12 }]),
      [
        { from: 0, until: 2 },
        { from: 3, until: 9 }
      ]
    )
  })
})
