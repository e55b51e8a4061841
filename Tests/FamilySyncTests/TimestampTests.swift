import Testing
@testable import FamilySync

@Suite struct TimestampTests {
    @Test(arguments: [
        ("2026-11-30T10:00:00Z", "2026-11-30T10:00:00.000Z"),
        ("2026-11-30T10:00:00.1Z", "2026-11-30T10:00:00.100Z"),
        ("2026-11-30T10:00:00.123456Z", "2026-11-30T10:00:00.123Z"),
        ("2026-11-30T12:00:00.5+02:00", "2026-11-30T10:00:00.500Z"),
        ("2026-11-30t09:30:00-00:30", "2026-11-30T10:00:00.000Z"),
        ("1970-01-01T00:00:00Z", "1970-01-01T00:00:00.000Z"),
        ("1969-12-31T23:59:59.999Z", "1969-12-31T23:59:59.999Z"),
        ("2000-02-29T00:00:00Z", "2000-02-29T00:00:00.000Z"),
        ("2016-12-31T23:59:60Z", "2016-12-31T23:59:59.999Z"),
    ])
    func parsesAndNormalizes(input: String, expected: String) throws {
        let t = try #require(Timestamp(rfc3339: input))
        #expect(t.rfc3339 == expected)
    }

    @Test(arguments: ["", "2026-11-30", "2026-11-30T10:00:00", "2026-13-01T00:00:00Z", "2026-02-30T00:00:00Z",
                      "2026-11-30T24:00:00Z", "2026-11-30T10:00:00.Z", "2026-11-30T10:00:00+2:00", "2026-11-30T10:00:00Zjunk",
                      "1900-02-29T00:00:00Z", "２０２６-11-30T10:00:00Z"])
    func rejects(input: String) {
        #expect(Timestamp(rfc3339: input) == nil)
    }

    /// An offset must not carry a time outside 0000-9999 in UTC: it would print
    /// back as another time (the year has four digits).
    @Test func offsetsStayWithinTheFourDigitYears() {
        #expect(Timestamp(rfc3339: "9999-12-31T23:59:59.999-04:00") == nil)
        #expect(Timestamp(rfc3339: "0000-01-01T00:00:00.000+00:01") == nil)
        #expect(Timestamp(rfc3339: "9999-12-31T23:59:59.999Z") == .latest)
        #expect(Timestamp(rfc3339: "0000-01-01T00:00:00Z") == .earliest)
        #expect(Timestamp(rfc3339: "9999-12-31T19:59:59.999-04:00") == .latest)
    }

    @Test func durations() {
        #expect(TimeSpan(parsing: "90d") == TimeSpan.days(90))
        #expect(TimeSpan(parsing: "10m")?.milliseconds == 600_000)
        #expect(TimeSpan(parsing: "500ms")?.milliseconds == 500)
        #expect(TimeSpan(parsing: "10") == nil)
        #expect(TimeSpan(parsing: "m") == nil)
        #expect(TimeSpan(parsing: "-5m") == nil)
        #expect(TimeSpan.minutes(10).description == "10m")
    }

    /// A product past Int64 or past the whole range of times is refused, never wrapped.
    @Test func overlongDurationsAreRefusedNotWrapped() {
        #expect(TimeSpan.parse("30500568905w") == .failure(.tooLong))        // wraps Int64 when multiplied
        #expect(TimeSpan.parse("99999999999999999999ms") == .failure(.tooLong))  // past Int64 as digits
        #expect(TimeSpan.parse("600000w") == .failure(.tooLong))             // fits Int64, longer than years 0-9999
        #expect(TimeSpan.parse("521000w") == .success(TimeSpan.days(521_000 * 7)))
        #expect(TimeSpan.parse("12x") == .failure(.malformed))
        #expect(TimeSpan.parse("") == .failure(.malformed))
    }

    @Test func timeArithmeticSaturates() {
        let t = Timestamp(milliseconds: .max - 5)
        #expect(t.adding(TimeSpan(milliseconds: 10)).milliseconds == .max)
        #expect(Timestamp(milliseconds: .min + 5).subtracting(TimeSpan(milliseconds: 10)).milliseconds == .min)
        #expect(Timestamp(milliseconds: 100).subtracting(TimeSpan(milliseconds: 10)).milliseconds == 90)
    }
}
