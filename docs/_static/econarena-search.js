/* Search that works from file:// and on a host, with snippets and a ranking for readers.
 *
 * Sphinx's search reads its index from searchindex.js (a script: fine from file://), but fetches each
 * result's page to cut a snippet, which a browser refuses for file:// URLs: results came without
 * snippets. Here those fetches are answered from econarena-pages.js (every page's text, written at build
 * time by docs/_ext/econarena_docs.py), loaded on the search page only. The Scorer keeps Sphinx's weights
 * and moves the changelog (it names every feature) and the contributors' recipes below the pages that
 * explain them.
 */
var Scorer = {
  score: (result) => {
    const [docname, title, anchor, descr, score] = result;
    if (docname === "changelog") return score / 4;
    if (docname.startsWith("reference/")) return score * 0.8; // the generated tables: after the guides
    if (docname === "contributing") return score / 2; // the recipes name every part: after the user's guides
    return score;
  },
  objNameMatch: 11, objPartialMatch: 6, objPrio: {0: 15, 1: 5, 2: -5}, objPrioDefault: 0,
  title: 15, partialTitle: 7, term: 5, partialTerm: 2,
};

(function () {
  if (!/(^|\/)search\.html$/.test(window.location.pathname)) return;
  const root = new URL(document.documentElement.dataset.content_root || "./", document.baseURI);
  const loaded = new Promise((resolve) => {
    const s = document.createElement("script");
    s.src = new URL("_static/econarena-pages.js", root).href;
    s.onload = () => resolve(window.ECONARENA_PAGES || {});
    s.onerror = () => resolve({});
    document.head.appendChild(s);
  });
  const escape = (t) => t.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
  const realFetch = window.fetch ? window.fetch.bind(window) : null;
  window.fetch = (url, options) => {
    let doc = null;
    try {
      const u = new URL(url, document.baseURI);
      if (u.href.startsWith(root.href) && u.pathname.endsWith(".html"))
        doc = decodeURIComponent(u.href.slice(root.href.length)).replace(/\.html$/, "");
    } catch (e) { doc = null; }
    if (doc === null) return realFetch(url, options);
    return loaded.then((pages) => {
      if (!(doc in pages)) return realFetch(url, options);
      return new Response('<div role="main">' + escape(pages[doc]) + "</div>",
                          {headers: {"Content-Type": "text/html"}});
    });
  };
})();
