/* Figures on a phone: a figure that the text column would shrink below half its size (two panels
   side by side, a wide legend) is shown at half its size instead, in a box that scrolls sideways,
   so that its labels stay readable (13 pt at 100 dpi is 9 CSS px at half size). Wider screens
   and print are untouched. tools/check_site.py --browser measures every figure at 390 px. */
(function () {
  "use strict";
  var SCALE = 0.5;
  var phone = window.matchMedia("screen and (max-width: 600px)");
  function fit(img) {
    var figure = img.closest("figure");
    if (!figure || !img.naturalWidth) return;
    img.style.width = "";
    img.style.maxWidth = "";
    figure.classList.remove("sxor-pan");
    if (!phone.matches) return;
    var column = figure.clientWidth;
    if (column < img.naturalWidth * SCALE) {
      img.style.maxWidth = "none";
      img.style.width = Math.round(img.naturalWidth * SCALE) + "px";
      figure.classList.add("sxor-pan");
    }
  }
  function fitAll() {
    document.querySelectorAll(".bd-article figure img").forEach(function (img) {
      if (img.complete) fit(img);
      else img.addEventListener("load", function () { fit(img); }, { once: true });
    });
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", fitAll);
  else fitAll();
  window.addEventListener("resize", fitAll);
})();
