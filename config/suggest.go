package config

import "sort"

// suggest returns a hint for an unknown broker setting: the broker synonym
// when key is a topic setting, else the closest Kafka setting within a
// small edit distance, else "".
func suggest(defs []Def, key string) string {
	if td, ok := topicDef(key); ok && td.BrokerSynonym != "" {
		return "; " + key + " is a topic setting, the broker default is " + td.BrokerSynonym
	}
	if best := closestSetting(defs, key); best != "" {
		return "; did you mean " + best + "?"
	}
	return ""
}

// closestSetting returns the Kafka broker setting nearest to key (samsa's
// implemented ones and those it accepts without implementing) within an
// edit distance of 2, the alphabetically first on a tie, or "".
func closestSetting(defs []Def, key string) string {
	names := make([]string, 0, len(defs)+len(ignoredKeys))
	for _, d := range defs {
		names = append(names, d.Name)
	}
	for k := range ignoredKeys {
		names = append(names, k)
	}
	for k := range kafkaDefs {
		names = append(names, k)
	}
	sort.Strings(names)
	best, bestDist := "", 3
	for _, n := range names {
		if dist := editDistance(key, n, bestDist); dist < bestDist {
			best, bestDist = n, dist
		}
	}
	return best
}

// editDistance is the Levenshtein distance of a and b, or limit if it is
// at least limit.
func editDistance(a, b string, limit int) int {
	if d := len(a) - len(b); d >= limit || -d >= limit {
		return limit
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		rowMin := cur[0]
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			rowMin = min(rowMin, cur[j])
		}
		if rowMin >= limit {
			return limit
		}
		prev, cur = cur, prev
	}
	return min(prev[len(b)], limit)
}
