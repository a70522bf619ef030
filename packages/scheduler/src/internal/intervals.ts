/** Sets of half-open intervals of instants: join, cut, clip. */
import type { Interval } from "../WorkingHours.js"

/** Sorted, with overlapping and touching intervals joined. */
export const merge = (intervals: ReadonlyArray<Interval>): Array<Interval> => {
  const sorted = intervals.filter((i) => i.until > i.from).sort((a, b) => a.from - b.from)
  const out: Array<Interval> = []
  for (const interval of sorted) {
    const last = out[out.length - 1]
    if (last !== undefined && interval.from <= last.until) {
      out[out.length - 1] = { from: last.from, until: Math.max(last.until, interval.until) }
    } else out.push(interval)
  }
  return out
}

/** `intervals` minus `removed` (both merged). */
export const subtract = (intervals: ReadonlyArray<Interval>, removed: ReadonlyArray<Interval>): Array<Interval> => {
  let out = merge(intervals)
  for (const cut of merge(removed)) {
    out = out.flatMap((i) => {
      if (cut.until <= i.from || cut.from >= i.until) return [i]
      const parts: Array<Interval> = []
      if (cut.from > i.from) parts.push({ from: i.from, until: cut.from })
      if (cut.until < i.until) parts.push({ from: cut.until, until: i.until })
      return parts
    })
  }
  return out
}

export const clip = (intervals: ReadonlyArray<Interval>, from: number, until: number): Array<Interval> =>
  intervals.flatMap((i) => {
    const a = Math.max(i.from, from)
    const b = Math.min(i.until, until)
    return b > a ? [{ from: a, until: b }] : []
  })
