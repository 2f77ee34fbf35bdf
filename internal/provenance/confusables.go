package provenance

// confusable maps characters that render like an ASCII letter, digit or
// separator to it. It is applied after NFKD (which already folds the
// fullwidth, mathematical, circled and superscript forms), so it lists
// only what NFKD leaves alone. It is a compact, best-effort subset of
// Unicode's confusables.txt for Latin targets, not the full table.
var confusable = func() map[rune]rune {
	m := map[rune]rune{}
	add := func(to rune, from string) {
		for _, r := range from {
			m[r] = to
		}
	}
	// Cyrillic (lower and upper case) and Cyrillic supplement.
	add('a', "аАӑӐ")
	add('b', "ВвЬьЪ")
	add('c', "сСϲϹⅽⅭ")
	add('d', "ԁԀ")
	add('e', "еЕҽ")
	add('g', "ԍɡ")
	add('h', "һҺНн")
	add('i', "іІӀӏıɩ")
	add('j', "јЈϳ")
	add('k', "кКκΚ")
	add('l', "ԉ")
	add('m', "мМΜ")
	add('n', "ոΝ")
	add('o', "оОοΟօՕσ")
	add('p', "рРρΡ")
	add('q', "ԛԚ")
	add('r', "г")
	add('s', "ѕЅ")
	add('t', "тТΤτ")
	add('u', "υսՍ")
	add('v', "νѵѴ")
	add('w', "ԝԜѡ")
	add('x', "хХχΧ")
	add('y', "уУүҮγΥ")
	add('z', "Ζᴢ")
	// Greek capitals not listed above.
	add('a', "ΑαɑⲀⲁ")
	add('b', "Ββ")
	add('e', "Εϵ")
	add('h', "Ηʜ")
	add('i', "Ιιɪ")
	// Latin small capitals and other Latin-script look-alikes.
	add('a', "ᴀ")
	add('b', "ʙ")
	add('c', "ᴄ")
	add('d', "ᴅ")
	add('e', "ᴇ")
	add('g', "ɢ")
	add('j', "ᴊȷ")
	add('k', "ᴋ")
	add('l', "ʟ")
	add('m', "ᴍ")
	add('n', "ɴ")
	add('o', "ᴏ")
	add('p', "ᴘ")
	add('r', "ʀ")
	add('s', "ꜱ")
	add('t', "ᴛ")
	add('u', "ᴜ")
	add('v', "ᴠ")
	add('w', "ᴡ")
	add('y', "ʏ")
	// Cherokee capitals.
	add('a', "Ꭺ")
	add('b', "Ᏼ")
	add('c', "Ꮯ")
	add('e', "Ꭼ")
	add('h', "Ꮋ")
	add('j', "Ꭻ")
	add('k', "Ꮶ")
	add('l', "Ꮮ")
	add('m', "Ꮇ")
	add('p', "Ꮲ")
	add('s', "Ꮪ")
	add('t', "Ꭲ")
	add('w', "Ꮃ")
	// Separators an address is spelled with.
	add('.', "。｡﹒․‧·")
	add('-', "‐‑‒–—―−﹘﹣⁃")
	add('/', "⁄∕⧸／")
	add('@', "﹫＠")
	add(':', "։꞉∶")
	return m
}()
