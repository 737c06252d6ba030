package results

import (
	"fmt"
	"image/color"
	"io"
	"math"
	"path/filepath"
	"slices"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"
)

// Plot draws GB/s against transfer size, one panel per direction and
// one line per path, with the link's raw rate dashed, as SVG or PNG by
// name's extension.
func Plot(w io.Writer, name string, rep Report, paths []string) error {
	var panels []*plot.Plot
	for _, dir := range []string{"up", "down"} {
		p, ok, err := panel(rep, dir, paths)
		if err != nil {
			return err
		}
		if ok {
			panels = append(panels, p)
		}
	}
	if len(panels) == 0 {
		return fmt.Errorf("no results to plot")
	}
	width, height := vg.Length(len(panels))*14*vg.Centimeter, 10*vg.Centimeter
	var canvas vg.CanvasWriterTo
	if strings.ToLower(filepath.Ext(name)) == ".svg" {
		canvas = vgsvg.New(width, height)
	} else {
		canvas = vgimg.PngCanvas{Canvas: vgimg.New(width, height)}
	}
	tiles := draw.Tiles{Rows: 1, Cols: len(panels), PadX: vg.Centimeter, PadTop: 0.3 * vg.Centimeter, PadBottom: 0.3 * vg.Centimeter}
	dc := draw.New(canvas)
	canvases := plot.Align([][]*plot.Plot{panels}, tiles, dc)
	for i, p := range panels {
		p.Draw(canvases[0][i])
	}
	_, err := canvas.WriteTo(w)
	return err
}

var pathColors = map[string]color.Color{
	Copy:           color.RGBA{R: 0x99, G: 0x99, B: 0x99, A: 0xff},
	Pinned:         color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff},
	InPlace:        color.RGBA{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff},
	Staging:        color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff},
	Fresh:          color.RGBA{R: 0xf7, G: 0xb6, B: 0xd2, A: 0xff},
	CPageable:      color.RGBA{R: 0x8c, G: 0x56, B: 0x4b, A: 0xff},
	CPinned:        color.RGBA{R: 0x17, G: 0xbe, B: 0xcf, A: 0xff},
	TorchPageable:  color.RGBA{R: 0xff, G: 0x7f, B: 0x0e, A: 0xff},
	TorchPinned:    color.RGBA{R: 0x94, G: 0x67, B: 0xbd, A: 0xff},
	TorchPinMemory: color.RGBA{R: 0xe3, G: 0x77, B: 0xc2, A: 0xff},
	CuPy:           color.RGBA{R: 0xbc, G: 0xbd, B: 0x22, A: 0xff},
	JAX:            color.RGBA{R: 0x7f, G: 0x7f, B: 0x7f, A: 0xff},
}

func panel(rep Report, dir string, paths []string) (*plot.Plot, bool, error) {
	p := plot.New()
	title := "host to device"
	if dir == "down" {
		title = "device to host"
	}
	p.Title.Text = fmt.Sprintf("%s, %s", rep.Device, title)
	p.X.Label.Text = "transfer size"
	p.Y.Label.Text = "GB/s"
	p.X.Scale = plot.LogScale{}
	p.X.Tick.Marker = sizeTicks{}
	p.Legend.Top, p.Legend.Left = true, true
	minX, maxX, any := math.Inf(1), math.Inf(-1), false
	for _, path := range paths {
		var pts plotter.XYs
		for _, r := range rep.Results {
			if r.Direction == dir && r.Path == path {
				pts = append(pts, plotter.XY{X: float64(r.Bytes), Y: r.Median})
				minX, maxX = math.Min(minX, float64(r.Bytes)), math.Max(maxX, float64(r.Bytes))
			}
		}
		if len(pts) == 0 {
			continue
		}
		any = true
		line, points, err := plotter.NewLinePoints(pts)
		if err != nil {
			return nil, false, err
		}
		line.Color, points.Color = pathColors[path], pathColors[path]
		line.Width = vg.Points(1.5)
		if !slices.Contains(GocudaPaths(), path) {
			line.Dashes = []vg.Length{vg.Points(2), vg.Points(2)} // another program's
		}
		p.Add(line, points)
		p.Legend.Add(path, line, points)
	}
	if !any {
		return nil, false, nil
	}
	if rep.LinkGBps > 0 {
		ceiling, err := plotter.NewLine(plotter.XYs{{X: minX, Y: rep.LinkGBps}, {X: maxX, Y: rep.LinkGBps}})
		if err != nil {
			return nil, false, err
		}
		ceiling.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
		ceiling.Color = color.Black
		p.Add(ceiling)
		p.Legend.Add(fmt.Sprintf("PCIe %s raw", rep.PCIe), ceiling)
	}
	p.Y.Min = 0
	return p, true, nil
}

// sizeTicks marks 4 KiB, 64 KiB, 1 MiB and so on, 16 times apart, with
// binary units; sizes between get unlabelled ticks, 4 times apart.
type sizeTicks struct{}

func (sizeTicks) Ticks(min, max float64) []plot.Tick {
	var ticks []plot.Tick
	for i, v := 0, 4.0; v <= max*1.01; i, v = i+1, v*4 {
		if v < min/1.01 {
			continue
		}
		t := plot.Tick{Value: v}
		if i%2 == 1 { // 4 KiB is 4·4⁵: every other power of 4 from it
			t.Label = strings.ReplaceAll(FormatSize(int(v)), " ", "")
		}
		ticks = append(ticks, t)
	}
	return ticks
}
