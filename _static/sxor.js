/* Figures on a phone: a figure that the text column would shrink below half its size (two panels
   side by side, a wide legend) is shown larger, in a box that scrolls sideways, so that its
   labels stay readable: at half its size, or smaller (down to 0.46) so that at least 0.7 of its
   width is in view at once. Wider screens and print are untouched. tools/check_site.py --browser
   measures every figure at 390 px (shown at 0.45 of its size or more, 0.7 of its width in view). */
(function () {
  "use strict";
  var SCALE = 0.5, SMALLEST = 0.46, IN_VIEW = 0.7;
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
      var scale = Math.max(SMALLEST, Math.min(SCALE, column / (IN_VIEW * img.naturalWidth)));
      img.style.maxWidth = "none";
      img.style.width = Math.floor(img.naturalWidth * scale) + "px";
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
