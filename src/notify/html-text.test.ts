import { describe, expect, it } from 'vitest'
import { htmlToText } from './html-text.js'

describe('htmlToText', () => {
  it('keeps the words and the structure, not the markup', () => {
    const html = `<html><head><style>p{color:red}</style></head><body><h1>Hello &amp; welcome</h1>
      <p>Your order <b>#42</b> shipped.<br>Track it <a href="https://example.com/t/42">here</a>.</p>
      <ul><li>One</li><li>Two &lt;3</li></ul><script>alert(1)</script><!-- hidden --><p>&#169; &#x2014; &nbsp;end</p></body></html>`
    expect(htmlToText(html)).toBe('Hello & welcome\n\nYour order #42 shipped.\nTrack it here (https://example.com/t/42).\n\n• One\n• Two <3\n\n© — end')
  })

  it('leaves plain text and unknown entities alone', () => {
    expect(htmlToText('just text &bogus; 5 < 6')).toBe('just text &bogus; 5 < 6')
  })
})
