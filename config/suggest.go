package config

// suggest returns a hint for an unknown broker setting: the broker synonym
// when key is a topic setting, else the closest implemented name within a
// small edit distance, else "".
func suggest(defs []Def, key string) string {
	if td, ok := topicDef(key); ok && td.BrokerSynonym != "" {
		return "; " + key + " is a topic setting, the broker default is " + td.BrokerSynonym
	}
	best, bestDist := "", 3
	for _, d := range defs {
		if dist := editDistance(key, d.Name, bestDist); dist < bestDist {
			best, bestDist = d.Name, dist
		}
	}
	if best == "" {
		return ""
	}
	return "; did you mean " + best + "?"
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
