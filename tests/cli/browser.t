#!/bin/sh
# tests/cli/browser.t: report.html in a real browser (Debian's chromium, headless; .ci/run
# installs it). Builds a report with every section (measured rows of the fixture, two
# modeled serving sweeps whose targets come in different orders, a training sweep, an
# assessment), renders it, takes a screenshot, and checks that the page's own
# self-check counted every chart as laid out with content, and that the console stayed
# silent (the page logs nothing, so any console line is an error).
#
# Then the layout, at 1280x800 and at 390x844 (a phone): a probe script appended to a
# copy of the page opens every fold and measures, in a frame of that size (a headless
# window is never narrower than 500 pixels, a frame is), and posts its figures to the
# page around it, which --dump-dom prints:
#   - no table wider than the page unless a wrapper scrolls it (overflow-x auto), and
#     every table that scrolls keeps its first column in view (position sticky);
#   - no text clipped: no chart text outside its chart, no element that hides overflow
#     cutting its content, nothing wider than the frame;
#   - per chart, no two text boxes (getBoundingClientRect of each SVG text) intersect;
#   - no table column narrower than 8 characters (its cell's content box over the width
#     of "0" in the cell's font: a column of long text once shrank to a letter a line);
#   - chart text at least 9 pixels tall as drawn (its font size times the SVG's scale on
#     the screen: a chart scaled to a phone's width drew its labels 4 pixels tall);
#   - a target has one colour in every chart: each series gnuplot titles (its key entry,
#     <g id="gnuplot_plot_N"><title>target</title>) is read for its stroke or fill, and
#     a target in more than one chart has the same colour in each.
# A page that breaks them must fail the checks: the same probe on a page with a clipped
# table, overlapping labels and a target in two colours is checked to say so.
# Needs TB_BIN, TB_SRCDIR and TB_BUILDDIR (make check sets them).

. "${TB_SRCDIR:-.}/tests/cli/tap.sh"

browser=""
for b in chromium chromium-browser; do
    if command -v "$b" >/dev/null 2>&1; then browser=$b; break; fi
done
if [ -z "$browser" ]; then
    echo "1..0 # SKIP no chromium (Debian package 'chromium'; .ci/run installs it)"
    exit 0
fi
if ! command -v gnuplot >/dev/null 2>&1; then
    echo "1..0 # SKIP gnuplot is not installed: the report has no charts to check"
    exit 0
fi

tmp="$TB_BUILDDIR/tests/tmp/browser"
rm -rf "$tmp" && mkdir -p "$tmp/profile" "$tmp/out"
tmp=$(cd "$tmp" && pwd)
cat > "$tmp/sweep.suite" <<'SUITE'
suite sweep
description serving batch sweeps (targets in two orders) and training, for the browser test
predict target=inf2.48xlarge,p5.48xlarge,trn1.32xlarge,p4d.24xlarge,p5en.48xlarge model=llama-3.1-8b phase=serve seq_in=1024 seq_out=256 batch=1,8,64,max precision=bf16
predict target=p5.48xlarge,trn2.48xlarge,p5en.48xlarge,trn1.32xlarge model=llama-3.1-70b phase=serve seq_in=1024 seq_out=256 batch=1,8,64,max precision=bf16
predict target=trn1.32xlarge,p5.48xlarge model=llama-3.1-8b phase=train seq_in=4096 batch=256 instances=4 precision=bf16
SUITE

# Chromium without a display, a user, a GPU or a network: everything it would try on
# its own is switched off, and the profile is a scratch folder.
render() { # render URL -> stdout: the DOM after the scripts ran; stderr: the log
    timeout 120 "$browser" --headless --no-sandbox --disable-gpu --disable-quic \
        --no-first-run --disable-background-networking --disable-component-update \
        --disable-sync --disable-dev-shm-usage --user-data-dir="$tmp/profile" \
        --enable-logging=stderr --v=0 --virtual-time-budget=${budget:-3000} \
        --window-size="${win:-1280,2400}" "$@"
}

# The probe: opens every fold, measures, and posts "key=value" lines to the page around
# it (or, alone, writes them into its own page).
cat > "$tmp/probe.js" <<'PROBE'
(function(){
var D=document,out=[],i,j,k;
function note(key,v){out.push(key+'='+v);}
var ds=D.querySelectorAll('details');for(i=0;i<ds.length;i++)ds[i].open=true;
var vw=D.documentElement.clientWidth;
note('docwidth',D.documentElement.scrollWidth-vw);
var ts=D.querySelectorAll('table'),bare=0,scrolls=0,loose=0;
for(i=0;i<ts.length;i++){var t=ts[i],w=null,e;
 for(e=t;e&&e!==D.body;e=e.parentElement){var o=getComputedStyle(e).overflowX;
  if(o==='auto'||o==='scroll'){w=e;break;}}
 if(!w){if(t.getBoundingClientRect().right>vw+1)bare++;continue;}
 if(w.getBoundingClientRect().right>vw+1)bare++;
 if(w.scrollWidth>w.clientWidth+1){scrolls++;var c=t.rows[0]&&t.rows[0].cells[0];
  if(!c||getComputedStyle(c).position!=='sticky')loose++;}}
note('tables',ts.length);note('bare',bare);note('scrolls',scrolls);note('loose',loose);
var all=D.body.getElementsByTagName('*'),cut=0;
for(i=0;i<all.length;i++){var s=getComputedStyle(all[i]);
 if((s.overflowX==='hidden'||s.overflowX==='clip')&&!(all[i] instanceof SVGElement)&&
  all[i].scrollWidth>all[i].clientWidth+1)cut++;}
note('cut',cut);
var cs=D.querySelectorAll('svg.chart'),outside=0,over=0,ex=[],col={},seen={};
for(i=0;i<cs.length;i++){var sv=cs[i],sr=sv.getBoundingClientRect(),tx=sv.querySelectorAll('text'),bb=[];
 for(j=0;j<tx.length;j++){var r=tx[j].getBoundingClientRect();
  if(!tx[j].textContent.trim()||r.width<=0)continue;
  if(r.left<sr.left-1||r.right>sr.right+1||r.top<sr.top-1||r.bottom>sr.bottom+1)outside++;
  bb.push([r,tx[j].textContent.trim()]);}
 for(j=0;j<bb.length;j++)for(k=j+1;k<bb.length;k++){var p=bb[j][0],q=bb[k][0];
  if(Math.min(p.right,q.right)-Math.max(p.left,q.left)>0.5&&
   Math.min(p.bottom,q.bottom)-Math.max(p.top,q.top)>0.5){over++;
   if(ex.length<3)ex.push('chart '+(i+1)+': "'+bb[j][1]+'" and "'+bb[k][1]+'"');}}
 var gs=sv.querySelectorAll('g[id*=gnuplot_plot]');
 for(j=0;j<gs.length;j++){var ti=gs[j].querySelector('title');
  if(!ti||/^gnuplot_plot_/.test(ti.textContent))continue;
  var name=ti.textContent.replace(/\(.*$/,'').trim(),el=gs[j].querySelectorAll('path,rect,polygon,polyline,circle,use'),cl='';
  for(k=0;k<el.length&&!cl;k++){var st=el[k].getAttribute('stroke')||'',f=el[k].getAttribute('fill')||'';
   cl=st&&st!=='none'&&st!=='currentColor'?st:(f&&f!=='none'&&!/^url/.test(f)?f:'');}
  if(!cl)continue;cl=cl.replace(/\s/g,'').toLowerCase();
  (col[name]=col[name]||{})[cl]=1;(seen[name]=seen[name]||{})[i]=1;}}
var mixed=[],multi=0;
for(var n in col){if(Object.keys(col[n]).length>1)mixed.push(n+' '+Object.keys(col[n]).join(' '));
 if(Object.keys(seen[n]).length>1)multi++;}
note('charts',cs.length);note('outside',outside);note('overlaps',over);note('overlap_examples',ex.join('; '));
note('series',Object.keys(col).length);note('multi',multi);note('mixed',mixed.length);note('mixed_examples',mixed.join('; '));
var cv=D.createElement('canvas').getContext('2d'),narrow=1e9,nex='';
for(i=0;i<ts.length;i++){var t=ts[i],hd=t.rows[0];
 for(j=0;j<t.rows.length;j++)for(k=0,col=0;k<t.rows[j].cells.length;col+=t.rows[j].cells[k].colSpan,k++){
  var c=t.rows[j].cells[k],st=getComputedStyle(c);if(c.colSpan>1||!c.clientWidth)continue;
  cv.font=st.font;var w=(c.clientWidth-parseFloat(st.paddingLeft)-parseFloat(st.paddingRight))/cv.measureText('0').width;
  if(w<narrow){narrow=w;nex='table '+(i+1)+' column "'+(hd&&hd.cells[col]?hd.cells[col].textContent:col)+'"';}}}
note('narrowest',ts.length?narrow.toFixed(1):'none');note('narrowest_example',nex);
var small=1e9,sex='';
for(i=0;i<cs.length;i++){var tx=cs[i].querySelectorAll('text');
 for(j=0;j<tx.length;j++){var m=tx[j].getScreenCTM();if(!tx[j].textContent.trim()||!m)continue;
  var px=parseFloat(getComputedStyle(tx[j]).fontSize)*Math.sqrt(m.a*m.a+m.b*m.b);
  if(px<small){small=px;sex='chart '+(i+1)+': "'+tx[j].textContent.trim().slice(0,30)+'"';}}}
note('chart_text_px',cs.length?small.toFixed(1):'none');note('chart_text_example',sex);
if(window.parent!==window)window.parent.postMessage(out.join('\n'),'*');
else{var pre=D.createElement('pre');pre.id='probe';pre.textContent=out.join('\n');D.body.appendChild(pre);}
})();
PROBE

# probe PAGE WIDTH HEIGHT -> stdout: the probe's lines for PAGE in a WIDTHxHEIGHT frame
probe() {
    cp "$1" "$tmp/probed.html" && {
        printf '<script>'; cat "$tmp/probe.js"; printf '</script>\n'
    } >> "$tmp/probed.html"
    cat > "$tmp/frame.html" <<FRAME
<!DOCTYPE html><html><body style="margin:0"><pre id="out">no answer</pre>
<iframe src="probed.html" width="$2" height="$3" style="border:0"></iframe>
<script>addEventListener('message',function(e){document.getElementById('out').textContent=e.data;});</script>
</body></html>
FRAME
    budget=8000 win=1400,1000 render --dump-dom "file://$tmp/frame.html" 2>/dev/null |
        sed -n '/<pre id="out">/,/<\/pre>/p' | sed 's/<[^>]*>//g'
}
# got KEY FILE: the probe's value of KEY
got() { sed -n "s/^$1=//p" "$2" | head -n 1; }
# at_least X MIN: X is a number and X >= MIN
at_least() { awk -v x="$1" -v m="$2" 'BEGIN { exit !(x ~ /^[0-9.]+$/ && x + 0 >= m) }'; }

echo "1..28"
"$TB_BIN" run --suite "$tmp/sweep.suite" --out "$tmp/out" >/dev/null 2>&1
check "a modeled sweep runs" test -s "$tmp/out/results.csv"
"$TB_BIN" report --out "$tmp/out" --usd-per-hour 0.36 \
    --assess "$TB_SRCDIR/reports/examples/assess-chat.csv" \
    "$TB_SRCDIR/tests/data/report_results.csv" "$tmp/out/results.csv" >/dev/null 2>"$tmp/report.err"
check "report with every section exits 0" test $? -eq 0

url="file://$tmp/out/report.html"
render --screenshot="$tmp/shot.png" "$url" >/dev/null 2>"$tmp/shot.err"
check "a screenshot is taken" test -s "$tmp/shot.png"
# a page of charts and tables compresses far worse than a blank one (a few KB)
size=$(wc -c < "$tmp/shot.png")
check "the screenshot is not blank ($size bytes)" test "$size" -gt 40000

render --dump-dom "$url" > "$tmp/dom.html" 2>"$tmp/dom.err"
charts=$(sed -n 's/.*data-charts="\([0-9]*\)".*/\1/p' "$tmp/dom.html" | head -n 1)
drawn=$(sed -n 's/.*data-charts-drawn="\([0-9]*\)".*/\1/p' "$tmp/dom.html" | head -n 1)
check "the page's script ran and found charts (${charts:-none})" test "${charts:-0}" -ge 5
check "every chart is laid out with content ($drawn of $charts)" test "${drawn:-x}" = "${charts:-y}"
check "no console messages (errors) while rendering" \
    sh -c "! grep -q 'CONSOLE' '$tmp/dom.err' '$tmp/shot.err'"
check "the assessment is a section of the page" grep -q '<section id="assessment">' "$tmp/dom.html"
# no path of this machine: the results files were given as absolute paths (the scratch
# folder's, the source tree's), and the documents name them relative to the report's
# folder or the working folder
check "the documents name no path of this machine ($(grep -o "$tmp/[^ <]*\|$TB_SRCDIR/tests/[^ <]*" "$tmp/out/report.html" "$tmp/out/report.md" | head -n 1))" \
    sh -c "! grep -q -e '$tmp/' -e '$TB_SRCDIR/tests/' '$tmp/out/report.html' '$tmp/out/report.md'"
folds=$(grep -o '<details class="fold"><summary>[^<]*([0-9]* rows*)' "$tmp/dom.html" | wc -l)
check "the long tables fold away, closed, each saying how many rows ($folds)" \
    sh -c "test $folds -ge 5 && ! grep -q '<details[^>]* open' '$tmp/dom.html'"

for size in 1280x800 390x844; do
    w=${size%x*}
    probe "$tmp/out/report.html" "$w" "${size#*x}" > "$tmp/probe-$w.txt"
    f="$tmp/probe-$w.txt"
    check "$size: the probe answered ($(got tables "$f") tables, $(got charts "$f") charts)" \
        test "$(got charts "$f")" = "$charts"
    check "$size: no table wider than the page outside a scroll wrapper ($(got bare "$f")), nothing wider than the frame ($(got docwidth "$f") px over)" \
        test "$(got bare "$f")" = 0 -a "$(got docwidth "$f")" -le 0
    check "$size: every table that scrolls keeps its first column in view ($(got loose "$f") of $(got scrolls "$f") do not)" \
        test "$(got loose "$f")" = 0
    check "$size: no text clipped ($(got outside "$f") chart texts outside their chart, $(got cut "$f") elements cutting their content)" \
        test "$(got outside "$f")" = 0 -a "$(got cut "$f")" = 0
    check "$size: no two chart labels overlap ($(got overlaps "$f"): $(got overlap_examples "$f"))" \
        test "$(got overlaps "$f")" = 0
    check "$size: no table column under 8 characters wide (narrowest $(got narrowest "$f"): $(got narrowest_example "$f"))" \
        at_least "$(got narrowest "$f")" 8
    check "$size: chart text at least 9 px tall (smallest $(got chart_text_px "$f") px: $(got chart_text_example "$f"))" \
        at_least "$(got chart_text_px "$f")" 9
done
f="$tmp/probe-1280.txt"
check "a target has one colour in every chart ($(got mixed "$f") with several: $(got mixed_examples "$f"))" \
    test "$(got mixed "$f")" = 0
check "the charts' keys name the targets, several in more than one chart ($(got multi "$f") of $(got series "$f"))" \
    test "$(got multi "$f")" -ge 3

# the checks can fail: a page with a table wider than a phone, in no scroll wrapper, two
# overlapping labels and a target in two colours is caught by each of them
cat > "$tmp/bad.html" <<'BAD'
<!DOCTYPE html><html><head><meta name="viewport" content="width=device-width, initial-scale=1"></head><body>
<div style="overflow:hidden;width:100px"><span style="white-space:nowrap">a long line cut by its box, a long line cut by its box</span></div>
<table><tr><td style="white-space:nowrap">a row far wider than a phone, a row far wider than a phone, a row far wider than a phone</td></tr></table>
<div style="width:120px"><table><tr><td>a</td><td>no price for this target in this region, as the long text of a reason</td></tr></table></div>
<svg class="chart" viewBox="0 0 400 200" width="400" height="200"><text x="10" y="50">$1.23</text><text x="20" y="52">$4.56</text><text x="100" y="150" font-size="6">tiny</text>
<g id="gnuplot_plot_1"><title>trn2.48xlarge</title><path stroke="rgb(0,114,178)" d="M0,0 L10,10"/></g></svg>
<svg class="chart" viewBox="0 0 400 200" width="400" height="200"><text x="390" y="50">outside</text>
<g id="gnuplot_plot_1"><title>trn2.48xlarge(measured)</title><path stroke="rgb(213,94,0)" d="M0,0 L10,10"/></g></svg>
</body></html>
BAD
probe "$tmp/bad.html" 390 844 > "$tmp/probe-bad.txt"
f="$tmp/probe-bad.txt"
check "a bad page trips every layout check (bare $(got bare "$f"), cut $(got cut "$f"), outside $(got outside "$f"), overlaps $(got overlaps "$f"), mixed $(got mixed "$f"), narrowest $(got narrowest "$f"), chart text $(got chart_text_px "$f") px)" \
    sh -c "test '$(got bare "$f")' -ge 1 -a '$(got cut "$f")' -ge 1 -a '$(got outside "$f")' -ge 1 \
    -a '$(got overlaps "$f")' -ge 1 -a '$(got mixed "$f")' = 1 &&
    awk -v n='$(got narrowest "$f")' -v c='$(got chart_text_px "$f")' 'BEGIN { exit !(n + 0 < 8 && c + 0 < 9) }'"

# the console check can fail: a page that throws is caught by it
printf '<!DOCTYPE html><title>x</title><script>throw new Error("boom")</script>\n' > "$tmp/broken.html"
render --dump-dom "file://$tmp/broken.html" >/dev/null 2>"$tmp/broken.err"
check "a page that throws shows on the console check" grep -q 'CONSOLE.*Uncaught Error: boom' "$tmp/broken.err"
