// Prepares the single-page build for print (tools/make_pdf.py runs it in the page, in Chromium,
// once MathJax has typeset): a title page and a contents page built from the book's own
// contents (parts, chapters, sections), the API reference dropped unless asked for, every link
// to another page of the site pointed at its target in this page, buttons and hidden cells
// removed, and each chapter started on a new page. Returns the contents' entries.
(function (options) {
  "use strict";
  const doc = document;
  const article = doc.querySelector("article.bd-article");
  if (!article) return { error: "no article.bd-article in the page" };
  const nav = doc.querySelector("nav .pst-show_toc_level") &&
    doc.querySelector("nav .pst-show_toc_level").closest("nav");
  if (!nav) return { error: "no contents (page-toc nav) in the page" };

  // 1. The API reference: dropped unless options.api (its documents, and links into them)
  const apiDocs = ["book/appendix/api", "book/appendix/api_part1_core",
    "book/appendix/api_part1_experiments", "book/appendix/api_part2_layers",
    "book/appendix/api_part2_construction"];
  if (!options.api) {
    for (const name of apiDocs) {
      const marker = doc.getElementById("document-" + name);
      if (!marker) continue;
      const section = marker.nextElementSibling;
      if (section && section.tagName === "SECTION") section.remove();
      marker.remove();
    }
    for (const a of nav.querySelectorAll("a")) {
      if (apiDocs.some((n) => a.getAttribute("href") === "#document-" + n)) a.closest("li").remove();
    }
  }

  // 2. Links: the single page writes "book/intro.html#target" for a target on another page of
  // the site; in the printed copy every such link points into this page. A link whose target is
  // not printed (the API reference) becomes plain text.
  for (const a of Array.from(article.querySelectorAll("a[href]"))) {
    const href = a.getAttribute("href");
    if (/^(https?:|mailto:)/.test(href)) continue;
    let id = null;
    const hash = href.indexOf("#");
    if (hash >= 0) id = decodeURIComponent(href.slice(hash + 1));
    else if (/\.html$/.test(href)) id = "document-" + href.replace(/^(\.\.\/)+/, "").replace(/\.html$/, "");
    const marker = id !== null && id.startsWith("document-") && doc.getElementById(id);
    if (marker && marker.nextElementSibling && marker.nextElementSibling.id)
      id = marker.nextElementSibling.id;
    if (id !== null && doc.getElementById(id)) {
      a.setAttribute("href", "#" + id);
    } else {
      const span = doc.createElement("span");
      span.className = a.className.replace(/\breference\b/g, "sxor-unlinked");
      while (a.firstChild) span.appendChild(a.firstChild);
      a.replaceWith(span);
    }
  }

  // 3. Nothing that only works on screen: hidden cells (code shown or hidden as on the site, so
  // a hidden input is left out, never printed as a button), heading anchors, copy buttons.
  for (const el of article.querySelectorAll(
    "details.hide, .cell.tag_remove-input .cell_input, a.headerlink, button, .copybtn, " +
    ".toggle-button, .tag_hide-cell > details")) el.remove();
  for (const el of article.querySelectorAll("details")) el.setAttribute("open", "");

  // 4. Each document after the introduction starts on a new page.
  for (const marker of article.querySelectorAll('span[id^="document-"]')) {
    const section = marker.nextElementSibling;
    if (section) section.classList.add("sxor-chapter");
  }

  // Theorems, exercises, outputs and a cell with its figure are kept on one page when they fit
  // in most of one (a box taller than that may break: kept whole, it would leave a page blank).
  const fits = (options.pageHeight || 1170) * 0.6;
  for (const el of article.querySelectorAll(
    ".admonition, div.proof, div.exercise, div.cell_output, div.cell")) {
    if (el.matches("div.cell") && !el.querySelector("figure")) continue;
    if (el.getBoundingClientRect().height < fits) el.classList.add("sxor-keep");
  }

  // 5. Nothing but the article is printed (the theme's sidebars, headers and page contents)
  for (let node = article; node && node !== doc.body; node = node.parentElement) {
    for (const sibling of Array.from(node.parentElement.children)) {
      if (sibling !== node && !["SCRIPT", "STYLE", "LINK"].includes(sibling.tagName))
        sibling.style.setProperty("display", "none", "important");
    }
  }

  // 6. Title page and contents: parts (the contents' captions), chapters and their sections.
  const entries = [];
  const contents = doc.createElement("section");
  contents.className = "sxor-contents";
  contents.innerHTML = "<h2 class='sxor-contents-title'>Contents</h2>";
  const list = doc.createElement("div");
  contents.appendChild(list);
  let part = null;
  // each entry's target: an anchor of its own at the top of its heading (section ids such as
  // "summary" repeat from chapter to chapter in the single page)
  const anchor = (heading) => {
    const span = doc.createElement("span");
    span.id = "sxor-toc-" + entries.length;
    heading.insertBefore(span, heading.firstChild);
    return span.id;
  };
  const add = (level, title, target) => {
    const row = doc.createElement("a");
    row.className = "sxor-toc-row sxor-toc-" + level;
    row.setAttribute("href", "#" + target);
    row.innerHTML = "<span class='sxor-toc-title'></span><span class='sxor-toc-page'>000</span>";
    row.firstChild.textContent = title;
    list.appendChild(row);
    entries.push({ level: level, title: title, target: target });
  };
  for (const node of nav.querySelectorAll("p.caption, li > a")) {
    if (node.tagName === "P") {
      part = node.textContent.trim();
      if (part === "Before you start") { part = null; continue; }
      const first = node.nextElementSibling && node.nextElementSibling.querySelector("a");
      if (!first) continue;
      const target = first.getAttribute("href").slice(1);
      // a part heading of its own, on the part's first page
      // a block of its own (the theme hides extra h1 elements in print)
      const heading = doc.createElement("div");
      heading.setAttribute("role", "heading");
      heading.setAttribute("aria-level", "1");
      heading.className = "sxor-part";
      heading.id = "sxor-part-" + entries.length;
      heading.textContent = part;
      const marker = doc.getElementById(target);
      const section = marker && marker.nextElementSibling;
      if (section) section.parentNode.insertBefore(heading, marker);
      if (section) section.classList.remove("sxor-chapter");
      add("part", part, anchor(heading));
      continue;
    }
    const target = node.getAttribute("href").slice(1);
    const marker = doc.getElementById(target);
    if (!marker) continue;
    const level = node.closest("li").classList.contains("toctree-l1") ? "chapter" : "section";
    const section = marker.nextElementSibling;
    const top = section && section.querySelector("h1, h2, h3, h4");
    if (!top) continue;
    add(level, node.textContent.trim(), anchor(top));
    // the sections of a chapter: its h3 headings
    if (level !== "chapter" || /overview|notation|instructors/.test(target)) continue;
    for (const h of section.querySelectorAll(":scope > section > h3")) {
      const sub = h.parentElement;
      if (!sub.id) continue;
      const number = h.querySelector(".section-number");
      if (!number) continue;
      add("section", h.textContent.trim(), anchor(h));
    }
  }
  const intro = article.querySelector("section");
  const title = doc.createElement("section");
  title.className = "sxor-title-page";
  const h1 = intro.querySelector("h1");
  title.innerHTML = "<p class='sxor-title'></p><p class='sxor-subtitle'></p><p class='sxor-author'></p>" +
    "<p class='sxor-version'></p>";
  title.querySelector(".sxor-title").textContent = h1 ? h1.textContent.trim() : doc.title;
  title.querySelector(".sxor-subtitle").textContent = "Executable lecture notes";
  title.querySelector(".sxor-author").textContent = options.author || "";
  // the version and commit the build stamped on every page (the footer's "Version ..." line)
  const edition = doc.querySelector(".sxor-edition");
  title.querySelector(".sxor-version").textContent = edition ? edition.textContent.trim() : "";
  article.insertBefore(contents, article.firstChild);
  article.insertBefore(title, contents);
  return { entries: entries };
})
