// The console works without this script; with it, a form asks before it discards, and
// j / k move between the rows of a table (Enter opens the row's record).
"use strict";
document.addEventListener("submit", (event) => {
  const button = event.submitter;
  const question = button && button.dataset.confirm;
  if (question && !window.confirm(question)) event.preventDefault();
});
document.addEventListener("keydown", (event) => {
  if (event.key !== "j" && event.key !== "k") return;
  const target = event.target;
  if (target.closest("input, textarea, select") || event.ctrlKey || event.metaKey || event.altKey) return;
  const links = [...document.querySelectorAll("table[data-keys] tbody tr td a:first-of-type")];
  if (!links.length) return;
  const at = links.indexOf(document.activeElement);
  const next = event.key === "j" ? Math.min(at + 1, links.length - 1) : Math.max(at - 1, 0);
  links[at === -1 ? 0 : next].focus();
  event.preventDefault();
});
